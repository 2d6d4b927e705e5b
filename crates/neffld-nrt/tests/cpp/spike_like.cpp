// A client of the public libnrt headers written the way aws-neuron/nkipy's
// spike drives libnrt: RAII owners for the runtime, models, tensors, tensor
// sets and a system-trace session, with every status checked, and the async
// API 3.0 as spike's feat/spike-async branch calls it (8-argument tensor
// writes and reads with the tensor's logical core, NRT_STATUS *ret targets
// kept in a deque, an eventfd per execution unit, NRTA_SEQ_GET_SEQ_NUM
// against nrta_get_sequence) and as its decode variant does (an eventfd per
// sequence, nrta_is_completed). It is built against an installed prefix only
// (see scripts/test-cpp-client).
//
// Usage: spike_like NEFF CAPTURE_PATH
#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_status.h>
#include <nrt/nrt_sys_trace.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

// The async API 3.0 signatures this client is written against, exactly.
template <typename F, typename G>
constexpr bool same = std::is_same_v<F, G>;
static_assert(same<decltype(&nrta_tensor_write), NRT_STATUS (*)(nrt_tensor_t *, const void *, uint64_t, uint64_t,
                                                                 int, int, NRT_STATUS *, nrta_seq_t *)>);
static_assert(same<decltype(&nrta_tensor_read),
                   NRT_STATUS (*)(void *, nrt_tensor_t *, uint64_t, uint64_t, int, int, NRT_STATUS *, nrta_seq_t *)>);
static_assert(same<decltype(&nrta_tensor_copy), NRT_STATUS (*)(nrt_tensor_t *, uint64_t, nrt_tensor_t *, uint64_t,
                                                                uint64_t, int, NRT_STATUS *, nrta_seq_t *)>);
static_assert(same<decltype(&nrta_execute_schedule),
                   NRT_STATUS (*)(nrt_model_t *, const nrt_tensor_set_t *, nrt_tensor_set_t *, int, NRT_STATUS *,
                                  nrta_seq_t *)>);
static_assert(same<decltype(&nrta_event_register_xu_completion), NRT_STATUS (*)(uint32_t, nrta_xu_t, int, int)>);
static_assert(same<decltype(&nrta_event_register_seq_id_completion), NRT_STATUS (*)(nrta_seq_t, int)>);
static_assert(same<decltype(&nrta_get_sequence), NRT_STATUS (*)(uint32_t, nrta_xu_t, int, nrta_seq_t *)>);
static_assert(same<decltype(&nrta_is_completed), NRT_STATUS (*)(nrta_seq_t, bool *)>);
static_assert(same<decltype(&nrt_tensor_get_lnc_index), NRT_STATUS (*)(const nrt_tensor_t *, int *)>);
// The tensor operations of libnrt 2.35 as neffld declares them (inferred
// prototypes; see nrt.h's comment), with the dtype a tensor carries.
static_assert(same<decltype(&nrt_tensor_set_dtype), NRT_STATUS (*)(nrt_tensor_t *, nrt_dtype_t)>);
static_assert(same<decltype(&nrt_tensor_get_dtype), NRT_STATUS (*)(const nrt_tensor_t *, nrt_dtype_t *)>);
static_assert(same<decltype(&nrt_tensor_cast), NRT_STATUS (*)(const nrt_tensor_t *, nrt_tensor_t *, size_t)>);
static_assert(same<decltype(&nrt_tensor_compute),
                   NRT_STATUS (*)(nrt_op_type_t, nrt_tensor_t *const *, uint32_t, nrt_tensor_t *, size_t)>);
static_assert(same<decltype(&nrta_tensor_cast), NRT_STATUS (*)(const nrt_tensor_t *, nrt_tensor_t *, uint64_t, int,
                                                                NRT_STATUS *, nrta_seq_t *)>);
static_assert(same<decltype(&nrta_tensor_compute),
                   NRT_STATUS (*)(nrt_op_type_t, nrt_tensor_t *const *, uint32_t, nrt_tensor_t *, uint64_t, int,
                                  NRT_STATUS *, nrta_seq_t *)>);
static_assert(NRTA_XU_TENSOR_OP == 0 && NRTA_XU_COMPUTE == 1 && NRTA_XU_COLLECTIVES == 2 && NRTA_XU_TYPE_NUM == 3);

namespace {

struct NrtError : std::runtime_error {
  NRT_STATUS status;
  NrtError(NRT_STATUS s, const std::string &what)
      : std::runtime_error(what + ": " + nrt_get_status_as_str(s)), status(s) {}
};

void check(NRT_STATUS s, const char *what) {
  if (s != NRT_SUCCESS) throw NrtError(s, what);
}

void expect(bool ok, const std::string &what) {
  if (!ok) throw std::runtime_error("expectation failed: " + what);
}

struct Runtime {
  Runtime() { check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "2.0", "1.0"), "nrt_init"); }
  ~Runtime() { nrt_close(); }
  static uint32_t visible() {
    uint32_t n = 0;
    check(nrt_get_visible_nc_count(&n), "nrt_get_visible_nc_count");
    return n;
  }
  static uint32_t total() {
    uint32_t n = 0;
    check(nrt_get_total_nc_count(&n), "nrt_get_total_nc_count");
    return n;
  }
};

struct Model {
  nrt_model_t *ptr = nullptr;
  Model(const std::vector<char> &neff, int32_t core) {
    check(nrt_load(neff.data(), neff.size(), core, 1, &ptr), "nrt_load");
  }
  ~Model() {
    if (ptr) nrt_unload(ptr);
  }
  void unload() {
    check(nrt_unload(ptr), "nrt_unload");
    ptr = nullptr;
  }
  uint32_t lnc() const {
    nrt_model_info_t info;
    size_t out = 0;
    check(nrt_get_model_info(ptr, &info, sizeof(info), &out), "nrt_get_model_info");
    expect(out == sizeof(info), "nrt_get_model_info writes the whole struct");
    return info.vnc;
  }
};

struct Tensor {
  nrt_tensor_t *ptr = nullptr;
  Tensor(nrt_tensor_placement_t placement, int core, size_t size, const std::string &name) {
    check(nrt_tensor_allocate(placement, core, size, name.c_str(), &ptr), "nrt_tensor_allocate");
  }
  Tensor(const Tensor &source, size_t offset, size_t size, const std::string &name) {
    check(nrt_tensor_allocate_slice(source.ptr, offset, size, name.c_str(), &ptr),
          "nrt_tensor_allocate_slice");
  }
  Tensor(const Tensor &) = delete;
  ~Tensor() {
    if (ptr) nrt_tensor_free(&ptr);
  }
  size_t size() const { return nrt_tensor_get_size(ptr); }
  void write(const void *data, size_t size, size_t offset) {
    check(nrt_tensor_write(ptr, data, offset, size), "nrt_tensor_write");
  }
  void read(void *data, size_t size, size_t offset) const {
    check(nrt_tensor_read(ptr, data, offset, size), "nrt_tensor_read");
  }
};

int lnc_of(const nrt_tensor_t *tensor) {
  int lnc = -1;
  check(nrt_tensor_get_lnc_index(tensor, &lnc), "nrt_tensor_get_lnc_index");
  if (lnc == -1) throw std::runtime_error("a CPU tensor has no async queue");
  return lnc;
}

// One logical core's async queues, as spike drives them: requests are kept
// with their NRT_STATUS target until the unit's eventfd says they are done.
struct AsyncQueues {
  struct Pending {
    nrta_seq_t seq = 0;
    NRT_STATUS ret = NRT_FAILURE;
  };
  int lnc;
  int fds[NRTA_XU_TYPE_NUM];
  std::deque<Pending> pending[NRTA_XU_TYPE_NUM];

  explicit AsyncQueues(int lnc) : lnc(lnc) {
    for (int xu = 0; xu < NRTA_XU_TYPE_NUM; ++xu) {
      fds[xu] = eventfd(0, EFD_NONBLOCK);
      if (fds[xu] < 0) throw std::runtime_error("eventfd");
      check(nrta_event_register_xu_completion(lnc, static_cast<nrta_xu_t>(xu), 0, fds[xu]),
            "nrta_event_register_xu_completion");
    }
  }
  ~AsyncQueues() {
    for (int xu = 0; xu < NRTA_XU_TYPE_NUM; ++xu) {
      nrta_event_register_xu_completion(lnc, static_cast<nrta_xu_t>(xu), 0, -1);
      close(fds[xu]);
    }
  }
  Pending &submit(nrta_xu_t xu) {
    pending[xu].emplace_back();
    return pending[xu].back();
  }
  void write(nrt_tensor_t *tensor, const void *data, uint64_t offset, uint64_t size) {
    Pending &p = submit(NRTA_XU_TENSOR_OP);
    check(nrta_tensor_write(tensor, data, offset, size, static_cast<int>(lnc), /*queue=*/0, &p.ret, &p.seq),
          "nrta_tensor_write");
  }
  void read(void *data, nrt_tensor_t *tensor, uint64_t offset, uint64_t size) {
    Pending &p = submit(NRTA_XU_TENSOR_OP);
    check(nrta_tensor_read(data, tensor, offset, size, static_cast<int>(lnc), /*queue=*/0, &p.ret, &p.seq),
          "nrta_tensor_read");
  }
  void cast(const nrt_tensor_t *src, nrt_tensor_t *dst, uint64_t count) {
    Pending &p = submit(NRTA_XU_TENSOR_OP);
    check(nrta_tensor_cast(src, dst, count, /*queue=*/0, &p.ret, &p.seq), "nrta_tensor_cast");
  }
  // Drains the unit's eventfd, then retires every request up to the last
  // completed sequence; returns how many were retired.
  size_t poll(nrta_xu_t xu) {
    uint64_t signals = 0;
    if (::read(fds[xu], &signals, sizeof signals) != static_cast<ssize_t>(sizeof signals)) return 0;
    nrta_seq_t latest = 0;
    check(nrta_get_sequence(lnc, xu, 0, &latest), "nrta_get_sequence");
    size_t retired = 0;
    while (!pending[xu].empty() &&
           NRTA_SEQ_GET_SEQ_NUM(pending[xu].front().seq) <= NRTA_SEQ_GET_SEQ_NUM(latest)) {
      check(pending[xu].front().ret, "an async request");
      pending[xu].pop_front();
      ++retired;
    }
    return retired;
  }
};

struct TensorSet {
  nrt_tensor_set_t *ptr = nullptr;
  TensorSet() { check(nrt_allocate_tensor_set(&ptr), "nrt_allocate_tensor_set"); }
  ~TensorSet() {
    if (ptr) nrt_destroy_tensor_set(&ptr);
  }
  void add(const std::string &name, const Tensor &t) {
    check(nrt_add_tensor_to_tensor_set(ptr, name.c_str(), t.ptr), "nrt_add_tensor_to_tensor_set");
  }
};

struct SysTrace {
  explicit SysTrace(uint32_t core) : core(core) {
    nrt_sys_trace_config_t *config = nullptr;
    check(nrt_sys_trace_config_allocate(&config), "nrt_sys_trace_config_allocate");
    nrt_sys_trace_config_set_capture_enabled_for_nc(config, core, true);
    NRT_STATUS s = nrt_sys_trace_start(config);
    nrt_sys_trace_config_free(config);
    check(s, "nrt_sys_trace_start");
  }
  ~SysTrace() { nrt_sys_trace_stop(); }
  std::string fetch() {
    nrt_sys_trace_fetch_options_t *options = nullptr;
    check(nrt_sys_trace_fetch_options_allocate(&options), "nrt_sys_trace_fetch_options_allocate");
    nrt_sys_trace_fetch_options_set_nc_idx(options, core);
    char *buffer = nullptr;
    size_t written = 0;
    NRT_STATUS s = nrt_sys_trace_fetch_events(&buffer, &written, options);
    nrt_sys_trace_fetch_options_free(options);
    check(s, "nrt_sys_trace_fetch_events");
    std::string json(buffer, written);
    nrt_sys_trace_buffer_free(buffer);
    return json;
  }
  uint32_t core;
};

std::vector<char> read_file(const char *path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(std::string("cannot open ") + path);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

void run(const char *neff_path, const char *capture_path) {
  std::vector<char> neff = read_file(neff_path);
  {
    Runtime rt;
    uint32_t visible = Runtime::visible(), total = Runtime::total();
    std::printf("cores: %u visible of %u\n", visible, total);
    expect(visible > 0 && visible <= total, "visible cores within total");

    SysTrace trace(0);
    Model model(neff, 0);
    expect(model.lnc() == 0, "the model is on core 0");

    nrt_tensor_info_array_t *info = nullptr;
    check(nrt_get_model_tensor_info(model.ptr, &info), "nrt_get_model_tensor_info");
    std::vector<Tensor *> tensors;
    TensorSet inputs, outputs;
    for (uint64_t i = 0; i < info->tensor_count; ++i) {
      const nrt_tensor_info_t &t = info->tensor_array[i];
      bool in = t.usage == NRT_TENSOR_USAGE_INPUT;
      std::printf("%s %s %zu bytes, %u dims\n", in ? "input" : "output", t.name, t.size, t.ndim);
      Tensor *x = new Tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, t.size, t.name);
      expect(x->size() == t.size, "tensor size");
      (in ? inputs : outputs).add(t.name, *x);
      tensors.push_back(x);
    }
    check(nrt_free_model_tensor_info(info), "nrt_free_model_tensor_info");
    expect(!tensors.empty(), "the model has tensors");

    // Write a pattern, read it back whole and through a slice.
    Tensor &first = *tensors[0];
    std::vector<unsigned char> pattern(first.size());
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
    first.write(pattern.data(), pattern.size(), 0);
    std::vector<unsigned char> back(pattern.size());
    first.read(back.data(), back.size(), 0);
    expect(back == pattern, "read back what was written");
    Tensor slice(first, 64, 128, "slice");
    std::vector<unsigned char> part(128);
    slice.read(part.data(), part.size(), 0);
    expect(std::memcmp(part.data(), pattern.data() + 64, 128) == 0, "slice views its source");

    // The same through the async API 3.0: back-to-back writes of four
    // quarters, then a read, retired through the tensor-op unit's eventfd.
    {
      int lnc = lnc_of(first.ptr);
      expect(lnc == 0, "the tensor is on core 0");
      AsyncQueues queues(lnc);
      std::vector<unsigned char> reversed(pattern.rbegin(), pattern.rend());
      size_t quarter = reversed.size() / 4;
      for (size_t q = 0; q < 4; ++q) queues.write(first.ptr, reversed.data() + q * quarter, q * quarter, quarter);
      std::vector<unsigned char> async_back(4 * quarter);
      queues.read(async_back.data(), first.ptr, 0, async_back.size());
      nrta_seq_t first_seq = queues.pending[NRTA_XU_TENSOR_OP].front().seq;
      nrta_seq_t last_seq = queues.pending[NRTA_XU_TENSOR_OP].back().seq;
      expect(NRTA_SEQ_GET_SEQ_NUM(last_seq) == NRTA_SEQ_GET_SEQ_NUM(first_seq) + 4, "one sequence number per request");
      expect(queues.poll(NRTA_XU_TENSOR_OP) == 5, "five requests retired");
      expect(std::memcmp(async_back.data(), reversed.data(), async_back.size()) == 0, "async read of async writes");
      // Decode's way: an eventfd per sequence (signalled at once when done).
      int fd = eventfd(0, 0);
      check(nrta_event_register_seq_id_completion(last_seq, fd), "nrta_event_register_seq_id_completion");
      uint64_t one = 0;
      expect(::read(fd, &one, sizeof one) == static_cast<ssize_t>(sizeof one) && one == 1, "sequence eventfd signalled");
      close(fd);
      bool done = false;
      check(nrta_is_completed(last_seq, &done), "nrta_is_completed");
      expect(done, "the read completed");
      // Execution is refused when scheduled, with nothing queued.
      AsyncQueues::Pending &exec = queues.submit(NRTA_XU_COMPUTE);
      NRT_STATUS s = nrta_execute_schedule(model.ptr, inputs.ptr, outputs.ptr, 0, &exec.ret, &exec.seq);
      std::printf("nrta_execute_schedule: %s\n", nrt_get_status_as_str(s));
      expect(s == NRT_FAILURE && exec.seq == 0, "async execution is refused at once");
      queues.pending[NRTA_XU_COMPUTE].clear();
      first.write(pattern.data(), pattern.size(), 0);
    }

    // Tensor operations (libnrt 2.35, the default line): two float32
    // tensors added into a third on the device, then the sum cast to
    // float16 through the queue.
    {
      const size_t n = 256;
      std::vector<float> a(n), b(n), sum(n);
      for (size_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i) * 0.25f - 7.0f;
        b[i] = 3.0f / static_cast<float>(i + 1);
      }
      Tensor ta(NRT_TENSOR_PLACEMENT_DEVICE, 0, n * 4, "a"), tb(NRT_TENSOR_PLACEMENT_DEVICE, 0, n * 4, "b"),
          tc(NRT_TENSOR_PLACEMENT_DEVICE, 0, n * 4, "c"), th(NRT_TENSOR_PLACEMENT_DEVICE, 0, n * 2, "c16");
      for (Tensor *t : {&ta, &tb, &tc}) check(nrt_tensor_set_dtype(t->ptr, NRT_DTYPE_FLOAT32), "nrt_tensor_set_dtype");
      check(nrt_tensor_set_dtype(th.ptr, NRT_DTYPE_FLOAT16), "nrt_tensor_set_dtype");
      ta.write(a.data(), n * 4, 0);
      tb.write(b.data(), n * 4, 0);
      nrt_tensor_t *srcs[] = {ta.ptr, tb.ptr};
      NRT_STATUS s = nrt_tensor_compute(NRT_OP_ADD, srcs, 2, tc.ptr, n);
      std::printf("nrt_tensor_compute: %s\n", nrt_get_status_as_str(s));
      check(s, "nrt_tensor_compute");
      tc.read(sum.data(), n * 4, 0);
      bool exact = true;
      for (size_t i = 0; i < n; ++i) exact = exact && sum[i] == a[i] + b[i];
      expect(exact, "nrt_tensor_compute ADD is the element-wise sum");
      AsyncQueues queues(lnc_of(tc.ptr));
      queues.cast(tc.ptr, th.ptr, n);
      expect(queues.poll(NRTA_XU_TENSOR_OP) == 1, "the async cast retired");
      std::vector<uint16_t> half(n);
      th.read(half.data(), n * 2, 0);
      // -7 + 3 = -4, -6.5 + 1 = -5.5, -5.75 + 0.5 = -5.25, all exact in float16.
      expect(half[0] == 0xc400 && half[2] == 0xc580 && half[5] == 0xc540, "float16 of the sums");
    }

    // Execution, with a profile around it as spike's save_trace does: the
    // binding is checked, then the execution is refused.
    check(nrt_profile_start(model.ptr, capture_path), "nrt_profile_start");
    NRT_STATUS s = nrt_execute(model.ptr, inputs.ptr, outputs.ptr);
    check(nrt_profile_stop(capture_path), "nrt_profile_stop");
    std::printf("nrt_execute: %s\n", nrt_get_status_as_str(s));
    expect(s == NRT_FAILURE, "execution is refused with NRT_FAILURE");
    TensorSet empty;
    s = nrt_execute(model.ptr, empty.ptr, outputs.ptr);
    std::printf("nrt_execute with no inputs: %s\n", nrt_get_status_as_str(s));
    expect(s == NRT_INVALID, "a missing input gives NRT_INVALID");
    expect(read_file(capture_path).size() > 128, "the profile capture was written");

    for (Tensor *t : tensors) delete t;
    model.unload();
    std::string events = trace.fetch();
    std::printf("trace: %s\n", events.c_str());
    expect(events.find("\"model_load\"") != std::string::npos, "the trace has the load");
    expect(events.find("\"model_unload\"") != std::string::npos, "the trace has the unload");

    // A host tensor outlives the runtime until it is freed.
    Tensor host(NRT_TENSOR_PLACEMENT_HOST, -1, 256, "host");
    host.write(pattern.data(), 256, 0);
    nrt_close();
    std::vector<unsigned char> after(256);
    host.read(after.data(), after.size(), 0);
    expect(std::memcmp(after.data(), pattern.data(), 256) == 0, "host tensor readable after close");
    check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "2.0", "1.0"), "nrt_init again");
  }
  // Re-initialisation after the scope's close: a fresh runtime loads again.
  Runtime again;
  Model model(neff, -1);
  std::printf("reloaded on core %u\n", model.lnc());
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s NEFF CAPTURE_PATH\n", argv[0]);
    return 2;
  }
  try {
    run(argv[1], argv[2]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "spike_like: %s\n", e.what());
    return 1;
  }
  std::printf("spike_like: OK\n");
  return 0;
}
