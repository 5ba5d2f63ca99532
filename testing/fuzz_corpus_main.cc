// A main() for fuzz targets built as ordinary tests: feeds every file in the
// directories given as arguments to LLVMFuzzerTestOneInput, so each run of
// the test suite replays the committed corpus (under the sanitizers too).
//
//   cc_test(name = "npy_fuzzer_corpus_test", srcs = ["npy_fuzzer.cc"],
//           args = ["$(rootpath testdata/npy_corpus)"], ...,
//           deps = ["//testing:fuzz_corpus_main"])

#include <dirent.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    DIR* dir = opendir(argv[i]);
    if (dir == nullptr) {
      std::fprintf(stderr, "cannot open corpus directory %s\n", argv[i]);
      return 1;
    }
    std::vector<std::string> names;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(dir);
    for (const std::string& name : names) {
      std::ifstream in(std::string(argv[i]) + "/" + name, std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      std::string bytes = s.str();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()),
                             bytes.size());
      ++files;
    }
  }
  std::printf("replayed %d corpus files\n", files);
  return files > 0 ? 0 : 1;
}
