#include "runtime/cuda/emulated_driver.h"

#include <elf.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/cuda/emulated_grid.h"
#include "runtime/cuda/emulated_grid_abi.h"
#include "runtime/shared_library.h"

namespace lathe {
namespace {

constexpr CuResult kInvalidValue = 1;
constexpr CuResult kInvalidImage = 200;
constexpr CuResult kInvalidHandle = 400;
constexpr CuResult kNotFound = 500;
constexpr size_t kAlign = 256;  // cuMemAlloc's alignment
constexpr unsigned char kCanary = 0xCD;
constexpr unsigned char kUninitialized = 0xFF;  // NaN as f32/f64, -1 as int

size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A device buffer: its payload ends where the mapping's last page (no
// access) begins; the mapping's first page is inaccessible too.
struct Buffer {
  char* mapping = nullptr;
  size_t mapping_size = 0;
  char* data = nullptr;     // after the first page
  char* payload = nullptr;  // what cuMemAlloc returned
  size_t bytes = 0;
  char* end = nullptr;  // the last page's start
};

using Launcher = int (*)(const lathe_emu::LaunchConfig*, void**, char*, int);
using Binder = int (*)(const lathe_emu::GridHost*);
using ParamSizes = int (*)(size_t*, int);

struct Function {
  std::string name;
  Launcher launch = nullptr;
  ParamSizes params = nullptr;
};

struct Module {
  SharedLibrary library;
  std::vector<std::unique_ptr<Function>> functions;
};

struct Stream;

// Recorded `generation` times; the markers of the first `done` have run,
// the last one at `at` (the host's clock: the device's work runs there).
struct Event {
  uint64_t generation = 0;
  uint64_t done = 0;
  Stream* stream = nullptr;  // where it was last recorded
  std::chrono::steady_clock::time_point at;
};

// A queued piece of work: after `event` reaches `generation` (a
// cuStreamWaitEvent), `run`.
struct Item {
  std::function<void()> run;
  Event* event = nullptr;
  uint64_t generation = 0;
};

struct Stream {
  std::deque<Item> queue;
};

// A node of a graph: a kernel launch (its function, configuration and
// parameter values, copied when the node was added), or, with no function,
// a copy of `bytes` between device addresses.
struct GraphNode {
  Function* function = nullptr;
  lathe_emu::LaunchConfig config;
  std::shared_ptr<std::vector<std::string>> values;
  CuDevicePtr dst = 0, src = 0;
  size_t bytes = 0;
};

// A graph, or an instantiated one (a copy of its nodes).
struct Graph {
  std::vector<GraphNode> nodes;
};

struct Device {
  std::mutex mu;
  size_t memory = size_t{4} << 30;
  size_t in_use = 0;
  std::map<uintptr_t, Buffer> buffers;  // by payload address
  std::set<Module*> modules;
  std::set<Stream*> streams;
  std::set<Event*> events;
  std::set<Graph*> graphs, execs;
  Stream default_stream;
  std::string sticky;  // a kernel's error, until ResetEmulatedDevice
};

Device& Dev() {
  static Device* const d = [] {
    auto* device = new Device();
    if (const char* env = std::getenv("LATHE_EMULATED_DEVICE_MEMORY")) {
      uint64_t bytes = 0;
      if (absl::SimpleAtoi(env, &bytes) && bytes > 0) device->memory = bytes;
    }
    return device;
  }();
  return *d;
}

Stream& StreamOf(Device& d, CuStream s) {
  return s == nullptr ? d.default_stream : *reinterpret_cast<Stream*>(s);
}

bool KnownStream(Device& d, CuStream s) {
  return s == nullptr || d.streams.count(reinterpret_cast<Stream*>(s)) > 0;
}

// The buffer holding [p, p + n), or null.
Buffer* BufferOf(Device& d, CuDevicePtr p, size_t n) {
  auto it = d.buffers.upper_bound(static_cast<uintptr_t>(p));
  if (it == d.buffers.begin()) return nullptr;
  --it;
  Buffer& b = it->second;
  const uintptr_t start = reinterpret_cast<uintptr_t>(b.payload);
  if (p < start || n > b.bytes || p - start > b.bytes - n) return nullptr;
  return &b;
}

// ---- Faults ----------------------------------------------------------------

thread_local sigjmp_buf* fault_jump = nullptr;
thread_local void* fault_address = nullptr;
struct sigaction previous_segv, previous_bus;

void OnFault(int sig, siginfo_t* info, void* context) {
  if (fault_jump != nullptr) {
    fault_address = info->si_addr;
    siglongjmp(*fault_jump, 1);
  }
  // Not a kernel's: whoever handled it before, or the default action.
  struct sigaction& before = sig == SIGSEGV ? previous_segv : previous_bus;
  if ((before.sa_flags & SA_SIGINFO) != 0 && before.sa_sigaction != nullptr) {
    before.sa_sigaction(sig, info, context);
    return;
  }
  if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN &&
      before.sa_handler != nullptr) {
    before.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);  // the access faults again, now fatally
}

void InstallFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction on_fault = {};
    on_fault.sa_sigaction = OnFault;
    on_fault.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&on_fault.sa_mask);
    ::sigaction(SIGSEGV, &on_fault, &previous_segv);
    ::sigaction(SIGBUS, &on_fault, &previous_bus);
  });
}

// Where `address` lies against the buffers, for a kernel's error.
std::string Describe(Device& d, uintptr_t address) {
  for (const auto& [start, b] : d.buffers) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(b.mapping);
    if (address < lo || address >= lo + b.mapping_size) continue;
    const int64_t at = static_cast<int64_t>(address - start);
    return absl::StrCat("byte ", at, " of a device buffer of ", b.bytes,
                        " bytes (",
                        at < 0 ? "before its start" : "past its end", ")");
  }
  return absl::StrCat("0x", absl::Hex(address), ", in no device buffer");
}

// The first byte around a buffer a kernel changed, described; "" if none.
std::string BrokenGuard(Device& d) {
  for (const auto& [start, b] : d.buffers) {
    for (const char* p = b.data; p < b.end; ++p) {
      if (p == b.payload) p += b.bytes;
      if (p >= b.end) break;
      if (static_cast<unsigned char>(*p) != kCanary) {
        return Describe(d, reinterpret_cast<uintptr_t>(p));
      }
    }
  }
  return "";
}

// ---- Queues ----------------------------------------------------------------

void RunFront(Device& d, Stream& s);

// Runs `e`'s stream until `e` has reached `generation`.
void RunUntil(Device& d, Event& e, uint64_t generation) {
  while (e.done < generation && e.stream != nullptr &&
         !e.stream->queue.empty()) {
    RunFront(d, *e.stream);
  }
  e.done = std::max(e.done, std::min(generation, e.generation));
}

// Runs the first item of `s` (after the event it waits for).
void RunFront(Device& d, Stream& s) {
  Item item = std::move(s.queue.front());
  s.queue.pop_front();
  if (item.event != nullptr) RunUntil(d, *item.event, item.generation);
  item.run();
}

void Drain(Device& d, Stream& s) {
  while (!s.queue.empty()) RunFront(d, s);
}

void DrainAll(Device& d) {
  Drain(d, d.default_stream);
  for (Stream* s : d.streams) Drain(d, *s);
}

// ---- The table's functions -------------------------------------------------

// What a call that waited for the device answers: the sticky kernel error,
// if one happened.
CuResult Outcome(const Device& d) {
  return d.sticky.empty() ? kCudaSuccess : kCudaErrorLaunchFailed;
}

#define LOCKED                            \
  Device& d = Dev();                      \
  std::lock_guard<std::mutex> lock(d.mu); \
  if (!d.sticky.empty()) return kCudaErrorLaunchFailed

CuResult Init(unsigned int) { return kCudaSuccess; }
CuResult DriverGetVersion(int* v) {
  *v = 13000;
  return kCudaSuccess;
}

struct Known {
  CuResult code;
  const char* name;
  const char* text;
};
constexpr Known kKnown[] = {
    {kCudaSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kCudaErrorOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kCudaErrorNotReady, "CUDA_ERROR_NOT_READY", "device not ready"},
    {kCudaErrorLaunchFailed, "CUDA_ERROR_LAUNCH_FAILED",
     "unspecified launch failure"},
};

CuResult GetErrorName(CuResult e, const char** name) {
  for (const Known& k : kKnown) {
    if (k.code == e) {
      *name = k.name;
      return kCudaSuccess;
    }
  }
  *name = nullptr;
  return kInvalidValue;
}

CuResult GetErrorString(CuResult e, const char** text) {
  if (e == kCudaErrorLaunchFailed) {
    Device& d = Dev();
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.sticky.empty()) {
      *text = d.sticky.c_str();  // kept until ResetEmulatedDevice
      return kCudaSuccess;
    }
  }
  for (const Known& k : kKnown) {
    if (k.code == e) {
      *text = k.text;
      return kCudaSuccess;
    }
  }
  *text = nullptr;
  return kInvalidValue;
}

CuResult DeviceGetCount(int* n) {
  *n = 1;
  return kCudaSuccess;
}
CuResult DeviceGet(CuDevice* device, int ordinal) {
  if (ordinal != 0) return kInvalidValue;
  *device = 0;
  return kCudaSuccess;
}
CuResult DeviceGetName(char* name, int len, CuDevice device) {
  if (device != 0 || len <= 0) return kInvalidValue;
  std::snprintf(name, static_cast<size_t>(len), "%s",
                "lathe emulated CUDA device");
  return kCudaSuccess;
}
CuResult DeviceGetAttribute(int* value, int attribute, CuDevice device) {
  if (device != 0) return kInvalidValue;
  switch (attribute) {
    case kCuAttrComputeCapabilityMajor:
      *value = 9;
      return kCudaSuccess;
    case kCuAttrComputeCapabilityMinor:
      *value = 0;
      return kCudaSuccess;
    case kCuAttrMultiprocessorCount:
      *value = 4;
      return kCudaSuccess;
  }
  return kInvalidValue;
}
CuResult DeviceTotalMem(size_t* bytes, CuDevice device) {
  if (device != 0) return kInvalidValue;
  Device& d = Dev();
  std::lock_guard<std::mutex> lock(d.mu);
  *bytes = d.memory;
  return kCudaSuccess;
}
// The device's one context.
CuContext TheContext() {
  static int context;
  return reinterpret_cast<CuContext>(&context);
}
CuResult PrimaryCtxRetain(CuContext* ctx, CuDevice device) {
  if (device != 0) return kInvalidValue;
  *ctx = TheContext();
  return kCudaSuccess;
}
CuResult CtxGetCurrent(CuContext* ctx) {
  *ctx = TheContext();
  return kCudaSuccess;
}
CuResult PrimaryCtxRelease(CuDevice) { return kCudaSuccess; }
CuResult CtxSetCurrent(CuContext) { return kCudaSuccess; }
CuResult CtxSynchronize() {
  LOCKED;
  DrainAll(d);
  return Outcome(d);
}

CuResult MemGetInfo(size_t* free, size_t* total) {
  LOCKED;
  *total = d.memory;
  *free = d.memory > d.in_use ? d.memory - d.in_use : 0;
  return kCudaSuccess;
}

CuResult MemAlloc(CuDevicePtr* ptr, size_t bytes) {
  LOCKED;
  if (bytes == 0) return kInvalidValue;
  if (bytes > d.memory || d.in_use > d.memory - bytes) {
    return kCudaErrorOutOfMemory;
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t usable = RoundUp(bytes, kAlign);
  const size_t data = RoundUp(usable, page);
  Buffer b;
  b.mapping_size = data + 2 * page;
  void* m = ::mmap(nullptr, b.mapping_size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return kCudaErrorOutOfMemory;
  b.mapping = static_cast<char*>(m);
  b.data = b.mapping + page;
  if (::mprotect(b.data, data, PROT_READ | PROT_WRITE) != 0) {
    ::munmap(m, b.mapping_size);
    return kCudaErrorOutOfMemory;
  }
  b.end = b.data + data;
  b.payload = b.end - usable;
  b.bytes = bytes;
  std::memset(b.data, kCanary, data);
  std::memset(b.payload, kUninitialized, bytes);
  *ptr = reinterpret_cast<uintptr_t>(b.payload);
  d.buffers[*ptr] = b;
  d.in_use += bytes;
  return kCudaSuccess;
}

CuResult MemFree(CuDevicePtr ptr) {
  LOCKED;
  auto it = d.buffers.find(static_cast<uintptr_t>(ptr));
  if (it == d.buffers.end()) return kInvalidValue;
  DrainAll(d);  // cuMemFree waits for the device, as CUDA's does
  if (!d.sticky.empty()) return kCudaErrorLaunchFailed;
  it = d.buffers.find(static_cast<uintptr_t>(ptr));
  ::munmap(it->second.mapping, it->second.mapping_size);
  d.in_use -= it->second.bytes;
  d.buffers.erase(it);
  return kCudaSuccess;
}

CuResult MemAllocHost(void** p, size_t bytes) {
  *p = std::malloc(bytes > 0 ? bytes : 1);
  return *p != nullptr ? kCudaSuccess : kCudaErrorOutOfMemory;
}
CuResult MemFreeHost(void* p) {
  std::free(p);
  return kCudaSuccess;
}

// The device address `p` as a host pointer.
char* At(CuDevicePtr p) {
  return reinterpret_cast<char*>(static_cast<uintptr_t>(p));
}

// Queues `run` on `stream` when the device ranges `ranges` (address, size)
// lie within buffers and the stream is known.
CuResult Enqueue(Device& d, CuStream stream,
                 std::initializer_list<std::pair<CuDevicePtr, size_t>> ranges,
                 std::function<void()> run) {
  for (const auto& [p, n] : ranges) {
    if (BufferOf(d, p, n) == nullptr) return kInvalidValue;
  }
  if (!KnownStream(d, stream)) return kInvalidHandle;
  StreamOf(d, stream).queue.push_back({std::move(run), nullptr, 0});
  return kCudaSuccess;
}

CuResult MemcpyHtoDAsync(CuDevicePtr dst, const void* src, size_t n,
                         CuStream stream) {
  LOCKED;
  // The source is read now (pageable memory: the caller may reuse it).
  auto staged = std::make_shared<std::string>(static_cast<const char*>(src), n);
  return Enqueue(d, stream, {{dst, n}}, [dst, staged] {
    std::memcpy(At(dst), staged->data(), staged->size());
  });
}

CuResult MemcpyDtoHAsync(void* dst, CuDevicePtr src, size_t n,
                         CuStream stream) {
  LOCKED;
  return Enqueue(d, stream, {{src, n}},
                 [dst, src, n] { std::memcpy(dst, At(src), n); });
}

CuResult MemcpyDtoDAsync(CuDevicePtr dst, CuDevicePtr src, size_t n,
                         CuStream stream) {
  LOCKED;
  return Enqueue(d, stream, {{src, n}, {dst, n}},
                 [dst, src, n] { std::memmove(At(dst), At(src), n); });
}

CuResult MemsetD8Async(CuDevicePtr dst, unsigned char value, size_t n,
                       CuStream stream) {
  LOCKED;
  return Enqueue(d, stream, {{dst, n}},
                 [dst, value, n] { std::memset(At(dst), value, n); });
}

CuResult StreamCreate(CuStream* stream, unsigned int) {
  LOCKED;
  auto* s = new Stream();
  d.streams.insert(s);
  *stream = reinterpret_cast<CuStream>(s);
  return kCudaSuccess;
}

CuResult StreamDestroy(CuStream stream) {
  LOCKED;
  auto* s = reinterpret_cast<Stream*>(stream);
  if (stream == nullptr || d.streams.count(s) == 0) return kInvalidHandle;
  Drain(d, *s);  // its work still runs, as CUDA's does
  for (Event* e : d.events) {
    if (e->stream == s) e->stream = nullptr;
  }
  d.streams.erase(s);
  delete s;
  return Outcome(d);
}

CuResult StreamSynchronize(CuStream stream) {
  LOCKED;
  if (!KnownStream(d, stream)) return kInvalidHandle;
  Drain(d, StreamOf(d, stream));
  return Outcome(d);
}

CuResult StreamWaitEvent(CuStream stream, CuEvent event, unsigned int) {
  LOCKED;
  auto* e = reinterpret_cast<Event*>(event);
  if (!KnownStream(d, stream) || d.events.count(e) == 0) return kInvalidHandle;
  StreamOf(d, stream).queue.push_back({[] {}, e, e->generation});
  return kCudaSuccess;
}

CuResult EventCreate(CuEvent* event, unsigned int) {
  LOCKED;
  auto* e = new Event();
  d.events.insert(e);
  *event = reinterpret_cast<CuEvent>(e);
  return kCudaSuccess;
}

CuResult EventDestroy(CuEvent event) {
  LOCKED;
  auto* e = reinterpret_cast<Event*>(event);
  if (d.events.count(e) == 0) return kInvalidHandle;
  // Work that waits for it runs first (its pointer must stay good).
  DrainAll(d);
  d.events.erase(e);
  delete e;
  return kCudaSuccess;
}

CuResult EventRecord(CuEvent event, CuStream stream) {
  LOCKED;
  auto* e = reinterpret_cast<Event*>(event);
  if (d.events.count(e) == 0 || !KnownStream(d, stream)) return kInvalidHandle;
  Stream& s = StreamOf(d, stream);
  const uint64_t generation = ++e->generation;
  e->stream = &s;
  s.queue.push_back({[e, generation] {
                       e->done = std::max(e->done, generation);
                       e->at = std::chrono::steady_clock::now();
                     },
                     nullptr, 0});
  return kCudaSuccess;
}

CuResult EventQuery(CuEvent event) {
  LOCKED;
  auto* e = reinterpret_cast<Event*>(event);
  if (d.events.count(e) == 0) return kInvalidHandle;
  return e->done >= e->generation ? kCudaSuccess : kCudaErrorNotReady;
}

CuResult EventSynchronize(CuEvent event) {
  LOCKED;
  auto* e = reinterpret_cast<Event*>(event);
  if (d.events.count(e) == 0) return kInvalidHandle;
  RunUntil(d, *e, e->generation);
  return Outcome(d);
}

// The host time between the two markers' runs (the emulated work between
// them ran on the host, in stream order).
CuResult EventElapsedTime(float* ms, CuEvent start, CuEvent end) {
  LOCKED;
  auto* a = reinterpret_cast<Event*>(start);
  auto* b = reinterpret_cast<Event*>(end);
  if (d.events.count(a) == 0 || d.events.count(b) == 0) return kInvalidHandle;
  if (a->generation == 0 || b->generation == 0 || a->done < a->generation ||
      b->done < b->generation) {
    return kCudaErrorNotReady;
  }
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return kCudaSuccess;
}

// The size of the ELF image at `image`: the furthest its headers reach.
size_t ElfSize(const void* image) {
  const auto* eh = static_cast<const Elf64_Ehdr*>(image);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64) {
    return 0;
  }
  size_t size = std::max<size_t>(
      sizeof(Elf64_Ehdr), eh->e_shoff + size_t{eh->e_shnum} * eh->e_shentsize);
  size = std::max<size_t>(size,
                          eh->e_phoff + size_t{eh->e_phnum} * eh->e_phentsize);
  const auto* base = static_cast<const char*>(image);
  for (int i = 0; i < eh->e_phnum; ++i) {
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(
        base + eh->e_phoff + size_t{static_cast<size_t>(i)} * eh->e_phentsize);
    size = std::max<size_t>(size, ph->p_offset + ph->p_filesz);
  }
  return size;
}

CuResult ModuleLoadData(CuModule* module, const void* image) {
  LOCKED;
  if (image == nullptr) return kInvalidValue;
  const size_t size = ElfSize(image);
  if (size == 0) return kInvalidImage;
  absl::StatusOr<SharedLibrary> library = SharedLibrary::OpenImage(
      absl::string_view(static_cast<const char*>(image), size),
      "an emulated CUDA module");
  if (!library.ok()) return kInvalidImage;
  // The module's kernels run on this runtime's grid runner; a library
  // that does not bind to it (not a module, or one built against another
  // runner) is not an image this device takes.
  absl::StatusOr<void*> bind = library->Symbol("lathe_emu_bind");
  if (!bind.ok() || reinterpret_cast<Binder>(*bind)(&EmulatedGrid()) != 0) {
    return kInvalidImage;
  }
  auto* m = new Module{*std::move(library), {}};
  d.modules.insert(m);
  *module = reinterpret_cast<CuModule>(m);
  return kCudaSuccess;
}

CuResult ModuleUnload(CuModule module) {
  LOCKED;
  auto* m = reinterpret_cast<Module*>(module);
  if (d.modules.count(m) == 0) return kInvalidHandle;
  DrainAll(d);  // no queued launch of its functions may outlive it
  d.modules.erase(m);
  delete m;
  return kCudaSuccess;
}

CuResult ModuleGetFunction(CuFunction* function, CuModule module,
                           const char* name) {
  LOCKED;
  auto* m = reinterpret_cast<Module*>(module);
  if (d.modules.count(m) == 0) return kInvalidHandle;
  absl::StatusOr<void*> launch =
      m->library.Symbol(absl::StrCat("lathe_emu_launch_", name));
  absl::StatusOr<void*> params =
      m->library.Symbol(absl::StrCat("lathe_emu_params_", name));
  if (!launch.ok() || !params.ok()) return kNotFound;
  auto f = std::make_unique<Function>();
  f->name = name;
  f->launch = reinterpret_cast<Launcher>(*launch);
  f->params = reinterpret_cast<ParamSizes>(*params);
  *function = reinterpret_cast<CuFunction>(f.get());
  m->functions.push_back(std::move(f));
  return kCudaSuccess;
}

// Whether `f` is a function of a loaded module.
bool KnownFunction(Device& d, const Function* f) {
  for (Module* m : d.modules) {
    for (const auto& g : m->functions) {
      if (g.get() == f) return true;
    }
  }
  return false;
}

// Runs `f` as launched (under the device's lock); a fault or a broken
// guard becomes the device's sticky error.
void RunKernel(Device& d, const Function& f, lathe_emu::LaunchConfig config,
               std::vector<void*> params) {
  if (!d.sticky.empty()) return;
  InstallFaultHandler();
  char error[512] = "";
  sigjmp_buf jump;
  if (sigsetjmp(jump, 1) == 0) {
    fault_jump = &jump;
    const int rc = f.launch(&config, params.data(), error, sizeof(error));
    fault_jump = nullptr;
    if (rc != 0) {
      d.sticky = error;
      return;
    }
  } else {
    fault_jump = nullptr;
    d.sticky =
        absl::StrCat("kernel ", f.name, ": an access at ",
                     Describe(d, reinterpret_cast<uintptr_t>(fault_address)));
    return;
  }
  if (std::string broken = BrokenGuard(d); !broken.empty()) {
    d.sticky = absl::StrCat("kernel ", f.name, " wrote ", broken);
  }
}

// The values of `f`'s parameters, copied now (the caller may change them);
// null for a parameter list the function does not take.
std::shared_ptr<std::vector<std::string>> CopyParams(const Function& f,
                                                     void** params) {
  size_t sizes[64];
  const int n = f.params(sizes, 64);
  if (n > 64 || (n > 0 && params == nullptr)) return nullptr;
  auto values = std::make_shared<std::vector<std::string>>();
  for (int i = 0; i < n; ++i) {
    values->emplace_back(static_cast<const char*>(params[i]), sizes[i]);
  }
  return values;
}

// Queues `f` on `stream` with parameter values `values`.
void QueueKernel(Device& d, CuStream stream, Function* f,
                 lathe_emu::LaunchConfig config,
                 std::shared_ptr<std::vector<std::string>> values) {
  StreamOf(d, stream).queue.push_back({[&d, f, config, values] {
                                         // The kernel takes each parameter by
                                         // value: the values only read.
                                         std::vector<void*> pointers;
                                         for (std::string& v : *values)
                                           pointers.push_back(v.data());
                                         RunKernel(d, *f, config,
                                                   std::move(pointers));
                                       },
                                       nullptr, 0});
}

CuResult LaunchKernel(CuFunction function, unsigned int gx, unsigned int gy,
                      unsigned int gz, unsigned int bx, unsigned int by,
                      unsigned int bz, unsigned int, CuStream stream,
                      void** params, void** extra) {
  LOCKED;
  auto* f = reinterpret_cast<Function*>(function);
  if (!KnownFunction(d, f) || !KnownStream(d, stream)) return kInvalidHandle;
  if (extra != nullptr) return kInvalidValue;
  auto values = CopyParams(*f, params);
  if (values == nullptr) return kInvalidValue;
  QueueKernel(d, stream, f,
              lathe_emu::LaunchConfig{dim3(gx, gy, gz), dim3(bx, by, bz)},
              std::move(values));
  return kCudaSuccess;
}

// ---- Graphs ----------------------------------------------------------------
//
// A graph is its nodes in the order they were added (a dependency must be
// an earlier node, so that order respects every edge); launched, they are
// queued on the stream in that order, each checked as a launch or a copy
// is then.

// Node `k` of a graph is the handle k + 1.
CuGraphNode NodeHandle(size_t k) {
  return reinterpret_cast<CuGraphNode>(static_cast<uintptr_t>(k + 1));
}

// Whether the `n` dependencies are nodes of `g`.
bool KnownNodes(const Graph& g, const CuGraphNode* deps, size_t n) {
  if (n > 0 && deps == nullptr) return false;
  for (size_t i = 0; i < n; ++i) {
    const uintptr_t k = reinterpret_cast<uintptr_t>(deps[i]);
    if (k == 0 || k > g.nodes.size()) return false;
  }
  return true;
}

CuResult GraphCreate(CuGraph* graph, unsigned int flags) {
  LOCKED;
  if (graph == nullptr || flags != 0) return kInvalidValue;
  auto* g = new Graph();
  d.graphs.insert(g);
  *graph = reinterpret_cast<CuGraph>(g);
  return kCudaSuccess;
}

CuResult GraphAddKernelNode(CuGraphNode* node, CuGraph graph,
                            const CuGraphNode* deps, size_t n,
                            const CuKernelNodeParams* p) {
  LOCKED;
  auto* g = reinterpret_cast<Graph*>(graph);
  if (d.graphs.count(g) == 0) return kInvalidHandle;
  if (node == nullptr || p == nullptr || p->extra != nullptr ||
      !KnownNodes(*g, deps, n)) {
    return kInvalidValue;
  }
  auto* f = reinterpret_cast<Function*>(p->func);
  if (!KnownFunction(d, f)) return kInvalidHandle;
  GraphNode k;
  k.function = f;
  k.config = lathe_emu::LaunchConfig{dim3(p->grid_x, p->grid_y, p->grid_z),
                                     dim3(p->block_x, p->block_y, p->block_z)};
  k.values = CopyParams(*f, p->params);
  if (k.values == nullptr) return kInvalidValue;
  g->nodes.push_back(std::move(k));
  *node = NodeHandle(g->nodes.size() - 1);
  return kCudaSuccess;
}

CuResult GraphAddMemcpyNode(CuGraphNode* node, CuGraph graph,
                            const CuGraphNode* deps, size_t n,
                            const CuMemcpy3D* c, CuContext) {
  LOCKED;
  auto* g = reinterpret_cast<Graph*>(graph);
  if (d.graphs.count(g) == 0) return kInvalidHandle;
  // The emulated device copies one row between device addresses.
  if (node == nullptr || c == nullptr || !KnownNodes(*g, deps, n) ||
      c->src_memory_type != kCuMemoryTypeDevice ||
      c->dst_memory_type != kCuMemoryTypeDevice || c->height != 1 ||
      c->depth != 1 || c->src_x_bytes != 0 || c->dst_x_bytes != 0 ||
      c->src_y != 0 || c->dst_y != 0 || c->src_z != 0 || c->dst_z != 0 ||
      BufferOf(d, c->src_device, c->width_bytes) == nullptr ||
      BufferOf(d, c->dst_device, c->width_bytes) == nullptr) {
    return kInvalidValue;
  }
  GraphNode k;
  k.dst = c->dst_device;
  k.src = c->src_device;
  k.bytes = c->width_bytes;
  g->nodes.push_back(std::move(k));
  *node = NodeHandle(g->nodes.size() - 1);
  return kCudaSuccess;
}

CuResult GraphInstantiate(CuGraphExec* exec, CuGraph graph,
                          unsigned long long flags) {  // NOLINT: the ABI's
  LOCKED;
  auto* g = reinterpret_cast<Graph*>(graph);
  if (d.graphs.count(g) == 0) return kInvalidHandle;
  if (exec == nullptr || flags != 0) return kInvalidValue;
  auto* e = new Graph(*g);
  d.execs.insert(e);
  *exec = reinterpret_cast<CuGraphExec>(e);
  return kCudaSuccess;
}

CuResult GraphLaunch(CuGraphExec exec, CuStream stream) {
  LOCKED;
  auto* e = reinterpret_cast<Graph*>(exec);
  if (d.execs.count(e) == 0 || !KnownStream(d, stream)) return kInvalidHandle;
  // Every node is checked before any is queued: all of the graph or none.
  for (const GraphNode& k : e->nodes) {
    if (k.function != nullptr ? !KnownFunction(d, k.function)
                              : BufferOf(d, k.src, k.bytes) == nullptr ||
                                    BufferOf(d, k.dst, k.bytes) == nullptr) {
      return kInvalidValue;
    }
  }
  for (const GraphNode& k : e->nodes) {
    if (k.function != nullptr) {
      QueueKernel(d, stream, k.function, k.config, k.values);
    } else {
      const CuDevicePtr dst = k.dst, src = k.src;
      const size_t n = k.bytes;
      Enqueue(d, stream, {{src, n}, {dst, n}},
              [dst, src, n] { std::memmove(At(dst), At(src), n); });
    }
  }
  return kCudaSuccess;
}

CuResult GraphExecDestroy(CuGraphExec exec) {
  LOCKED;
  auto* e = reinterpret_cast<Graph*>(exec);
  if (d.execs.erase(e) == 0) return kInvalidHandle;
  delete e;  // queued launches hold their own copies
  return kCudaSuccess;
}

CuResult GraphDestroy(CuGraph graph) {
  LOCKED;
  auto* g = reinterpret_cast<Graph*>(graph);
  if (d.graphs.erase(g) == 0) return kInvalidHandle;
  delete g;
  return kCudaSuccess;
}

#undef LOCKED

}  // namespace

const CudaDriver& EmulatedCudaDriver() {
  static const CudaDriver* const table = [] {
    auto* t = new CudaDriver();
    t->source = "emulated";
    t->init = Init;
    t->driver_get_version = DriverGetVersion;
    t->get_error_name = GetErrorName;
    t->get_error_string = GetErrorString;
    t->device_get_count = DeviceGetCount;
    t->device_get = DeviceGet;
    t->device_get_name = DeviceGetName;
    t->device_get_attribute = DeviceGetAttribute;
    t->device_total_mem = DeviceTotalMem;
    t->primary_ctx_retain = PrimaryCtxRetain;
    t->primary_ctx_release = PrimaryCtxRelease;
    t->ctx_set_current = CtxSetCurrent;
    t->ctx_get_current = CtxGetCurrent;
    t->ctx_synchronize = CtxSynchronize;
    t->mem_get_info = MemGetInfo;
    t->mem_alloc = MemAlloc;
    t->mem_free = MemFree;
    t->mem_alloc_host = MemAllocHost;
    t->mem_free_host = MemFreeHost;
    t->memcpy_htod_async = MemcpyHtoDAsync;
    t->memcpy_dtoh_async = MemcpyDtoHAsync;
    t->memcpy_dtod_async = MemcpyDtoDAsync;
    t->memset_d8_async = MemsetD8Async;
    t->stream_create = StreamCreate;
    t->stream_destroy = StreamDestroy;
    t->stream_synchronize = StreamSynchronize;
    t->stream_wait_event = StreamWaitEvent;
    t->event_create = EventCreate;
    t->event_destroy = EventDestroy;
    t->event_record = EventRecord;
    t->event_query = EventQuery;
    t->event_synchronize = EventSynchronize;
    t->event_elapsed_time = EventElapsedTime;
    t->module_load_data = ModuleLoadData;
    t->module_unload = ModuleUnload;
    t->module_get_function = ModuleGetFunction;
    t->launch_kernel = LaunchKernel;
    t->graph_create = GraphCreate;
    t->graph_add_kernel_node = GraphAddKernelNode;
    t->graph_add_memcpy_node = GraphAddMemcpyNode;
    t->graph_instantiate = GraphInstantiate;
    t->graph_launch = GraphLaunch;
    t->graph_exec_destroy = GraphExecDestroy;
    t->graph_destroy = GraphDestroy;
    return t;
  }();
  return *table;
}

void SetEmulatedDeviceMemory(size_t bytes) {
  Device& d = Dev();
  std::lock_guard<std::mutex> lock(d.mu);
  d.memory = bytes;
}

void ResetEmulatedDevice() {
  Device& d = Dev();
  std::lock_guard<std::mutex> lock(d.mu);
  d.default_stream.queue.clear();
  for (Stream* s : d.streams) delete s;
  d.streams.clear();
  for (Event* e : d.events) delete e;
  d.events.clear();
  for (Graph* g : d.graphs) delete g;
  d.graphs.clear();
  for (Graph* e : d.execs) delete e;
  d.execs.clear();
  for (Module* m : d.modules) delete m;
  d.modules.clear();
  for (auto& [start, b] : d.buffers) ::munmap(b.mapping, b.mapping_size);
  d.buffers.clear();
  d.in_use = 0;
  d.sticky.clear();
}

}  // namespace lathe
