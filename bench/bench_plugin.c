/* A library the benchmark loads and unloads: each dlopen/dlclose changes the loaded set, so the
   next capture after a module-map refresh starts with no valid compiled rules. */
int bench_plugin_value(void) { return 42; }
