// libsystemc's own main() calls sc_main; tpusim has its own main() and drives
// the kernel through simulate() (sim/simulate.h), so this entry point exists
// only to satisfy the library's reference and is never called.
extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) { return 2; }  // C linkage, as SystemC declares it
