/* Built with the flags pkg-config gives for the installed stackwalk.pc. */
#include <errno.h>
#include <stackwalk/crash_handler_c.h>
#include <stackwalk/stackwalk.h>
#include <stdio.h>

int main(void) {
  void *pcs[32];
  int n = stackwalk_backtrace(pcs, 32, STACKWALK_FP);
  if (n < 1) {
    printf("pkg-config consumer failed: %s\n", stackwalk_strerror(n));
    return 1;
  }
  if (stackwalk_install_crash_handler(-1) != -EBADF) {
    printf("pkg-config consumer failed: the crash handler took fd -1\n");
    return 1;
  }
  printf("pkg-config consumer ok %d\n", n);
  return 0;
}
