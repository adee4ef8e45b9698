// An ordinary shared library that happens to sit in a plugin directory.
extern "C" int not_a_plugin_answer() { return 42; }
