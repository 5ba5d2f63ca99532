// LeakSanitizer's settings for a test binary that loads many libraries with
// thread-local storage at run time (the emulated CUDA device's modules keep
// their __shared__ memory and thread state thread_local): GCC 12's
// LeakSanitizer reads a garbage dynamic-TLS block at exit ("DTLS 20 at
// 0x19fa-0x3000002afc", then "Tracer caught signal 11 ... LeakSanitizer
// has encountered a fatal error"; google/sanitizers#1353) and fails a test
// that leaked nothing. Linking this in, the leak check does not take
// thread-local storage as roots: every leak is still reported, and the
// few blocks the system libraries reach only from thread-local storage
// (glibc's thread-specific data and loader lists, oneDNN's scratchpads,
// libgomp's thread count of a thread outside a team, which
// runtime/onednn.h's OneThread sets, and the scratchpad buffer each thread
// keeps for oneDNN, onednn::Execute's) are suppressed by name. Nothing
// here runs without the sanitizer.

extern "C" {

__attribute__((visibility("default"), used)) const char*
__lsan_default_options() {
  return "use_tls=0";
}

__attribute__((visibility("default"), used)) const char*
__lsan_default_suppressions() {
  return "leak:pthread_setspecific\n"
         "leak:_dl_map_object_deps\n"
         "leak:libdnnl.so\n"
         "leak:libgomp.so\n"
         "leak:lathe::onednn::Execute\n";
}

}  // extern "C"
