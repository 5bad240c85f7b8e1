// The executable of the alloc reference: everything measured lives in liballoc_ref.so (built from
// bench/alloc_ref.c), mapped next to libc like perfprobe's JIT code; see the note there.
int alloc_ref_main(int argc, char **argv);

int main(int argc, char **argv) { return alloc_ref_main(argc, argv); }
