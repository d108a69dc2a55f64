// A test helper: LoadedModules::Collect() inside a dl_iterate_phdr callback, as a check's driver
// lists the loaded objects (the loader lock held, so the list and its TLS cannot change).
#ifndef STACKWALK_TESTS_COLLECT_MODULES_H_
#define STACKWALK_TESTS_COLLECT_MODULES_H_

#include <link.h>

#include "leakcheck/scan/tls_roots.h"

inline bool CollectModules(stackwalk::leakcheck::LoadedModules* modules) {
  struct Context {
    stackwalk::leakcheck::LoadedModules* modules;
    bool ok = false;
  } context{modules};
  dl_iterate_phdr(
      [](dl_phdr_info*, size_t, void* p) {
        auto* c = static_cast<Context*>(p);
        c->ok = c->modules->Collect();
        return 1;  // once
      },
      &context);
  return context.ok;
}

#endif  // STACKWALK_TESTS_COLLECT_MODULES_H_
