// A host library's kernel table for cuda_kernels_test: kernels of
// emulated_kernels.cc, and (with LATHE_NAME_MISSING) one it lacks.
extern "C" __attribute__((visibility("default")))
const char* const lathe_device_kernels[] = {"scale",
#ifdef LATHE_NAME_MISSING
                                            "no_such_kernel",
#endif
                                            nullptr};
