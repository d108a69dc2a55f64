// Two small helpers the tests that run tools share: a file's bytes, and a shell command's status.
#ifndef STACKWALK_TESTS_FILE_AND_SHELL_H_
#define STACKWALK_TESTS_FILE_AND_SHELL_H_

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace stackwalk_test {

// The whole file ("" if it cannot be read).
inline std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `command` through the shell; its exit status (-1 if it did not exit).
inline int Shell(const std::string& command) {
  const int raw = std::system(command.c_str());
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

}  // namespace stackwalk_test

#endif  // STACKWALK_TESTS_FILE_AND_SHELL_H_
