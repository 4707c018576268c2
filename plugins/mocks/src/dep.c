/* libmock_dep.so: the shared library the missing_dependency mock links against.
 * The tests never ship it next to the mock, so dlopen() of the mock fails with
 * "libmock_dep.so: cannot open shared object file". */
__attribute__((visibility("default"))) int mock_dep_value(void);

__attribute__((visibility("default"))) int mock_dep_value(void) { return 42; }
