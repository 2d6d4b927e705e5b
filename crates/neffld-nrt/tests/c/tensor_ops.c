/*
 * A C client of the tensor operations of libnrt 2.35 (nrt_tensor_cast,
 * nrt_tensor_compute and their async forms), compiled only against
 * include/nrt:
 *
 *   tensor_ops            on a chip and line that have them (trn2, 2.35+)
 *   tensor_ops --refused  where the runtime has none (trn1, or a line before 2.35)
 *
 * The first mode allocates two float32 device tensors, writes them, adds
 * them into a third with nrt_tensor_compute and reads back the sum, which
 * must equal this program's own float additions; casts float32 to bfloat16
 * with nrt_tensor_cast, which must equal round-to-nearest-even computed
 * here on the bits (numpy's and ml_dtypes' rounding); runs MAX and a cast
 * through the async forms; and checks that every bad argument is refused
 * with NRT_INVALID. The second checks that every call returns NRT_FAILURE.
 * Prints each step; exit status 0 when every step gave what it should.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_status.h>

#define N 4096

static int failures = 0;

static void expect(const char *what, NRT_STATUS got, NRT_STATUS want) {
    printf("%-56s %s (%d)\n", what, nrt_get_status_as_str(got), (int)got);
    if (got != want) {
        printf("  expected %s (%d)\n", nrt_get_status_as_str(want), (int)want);
        failures++;
    }
}

static void check(const char *what, int ok) {
    printf("%-56s %s\n", what, ok ? "yes" : "NO");
    if (!ok) failures++;
}

/* A device tensor of `bytes` on logical core `vnc` with device dtype `dtype`. */
static nrt_tensor_t *device_tensor(int vnc, size_t bytes, nrt_dtype_t dtype, const char *name) {
    nrt_tensor_t *t = NULL;
    expect(name, nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, bytes, name, &t), NRT_SUCCESS);
    expect("  nrt_tensor_set_dtype", nrt_tensor_set_dtype(t, dtype), NRT_SUCCESS);
    return t;
}

/* float32 -> bfloat16 rounding to nearest, ties to even, on the bits. */
static uint16_t bf16_rne(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float a_of(int i) { return (float)i * 0.37f - 500.0f; }
static float b_of(int i) { return 1000.0f / (float)(i + 1) + (float)(i % 7) * 1e-3f; }

static void compute_and_cast(void) {
    static float a[N], b[N], sum[N], back[N];
    for (int i = 0; i < N; i++) {
        a[i] = a_of(i);
        b[i] = b_of(i);
    }
    nrt_tensor_t *ta = device_tensor(0, sizeof a, NRT_DTYPE_FLOAT32, "a");
    nrt_tensor_t *tb = device_tensor(0, sizeof b, NRT_DTYPE_FLOAT32, "b");
    nrt_tensor_t *tc = device_tensor(0, sizeof sum, NRT_DTYPE_FLOAT32, "c");
    expect("nrt_tensor_write a", nrt_tensor_write(ta, a, 0, sizeof a), NRT_SUCCESS);
    expect("nrt_tensor_write b", nrt_tensor_write(tb, b, 0, sizeof b), NRT_SUCCESS);

    nrt_tensor_t *srcs[] = {ta, tb};
    expect("nrt_tensor_compute ADD a b -> c", nrt_tensor_compute(NRT_OP_ADD, srcs, 2, tc, N), NRT_SUCCESS);
    expect("nrt_tensor_read c", nrt_tensor_read(tc, sum, 0, sizeof sum), NRT_SUCCESS);
    int same = 1;
    for (int i = 0; i < N; i++) {
        volatile float want = a[i] + b[i];
        if (memcmp(&sum[i], (const void *)&want, sizeof want) != 0) {
            if (same) printf("  element %d: %a, expected %a\n", i, sum[i], (double)want);
            same = 0;
        }
    }
    check("  c is the element-wise float32 sum", same);

    /* float32 -> bfloat16, with the ties of 1 + 2^-8 (down) and 1 + 3 * 2^-8 (up). */
    static float x[N];
    static uint16_t bf[N];
    for (int i = 0; i < N; i++) x[i] = a[i] * b[i];
    x[0] = 1.0f + 0x1p-8f;
    x[1] = 1.0f + 0x3p-8f;
    x[2] = -0.0f;
    x[3] = INFINITY;
    nrt_tensor_t *tx = device_tensor(0, sizeof x, NRT_DTYPE_FLOAT32, "x");
    nrt_tensor_t *th = device_tensor(0, sizeof bf, NRT_DTYPE_BFLOAT16, "x16");
    expect("nrt_tensor_write x", nrt_tensor_write(tx, x, 0, sizeof x), NRT_SUCCESS);
    expect("nrt_tensor_cast x -> x16", nrt_tensor_cast(tx, th, N), NRT_SUCCESS);
    expect("nrt_tensor_read x16", nrt_tensor_read(th, bf, 0, sizeof bf), NRT_SUCCESS);
    same = 1;
    for (int i = 0; i < N; i++) {
        if (bf[i] != bf16_rne(x[i])) {
            if (same) printf("  element %d: %#06x, expected %#06x\n", i, bf[i], bf16_rne(x[i]));
            same = 0;
        }
    }
    check("  x16 is x rounded to nearest even", same);
    check("  the ties", bf[0] == 0x3f80 && bf[1] == 0x3f82);

    /* Async: MAX into c, then c back to bfloat16, on tensor-op queue 0. */
    NRT_STATUS ret = NRT_FAILURE;
    nrta_seq_t seq = 0, seq2 = 0;
    expect("nrta_tensor_compute MAX a b -> c",
           nrta_tensor_compute(NRT_OP_MAX, srcs, 2, tc, N, 0, &ret, &seq), NRT_SUCCESS);
    expect("  *ret", ret, NRT_SUCCESS);
    ret = NRT_FAILURE;
    expect("nrta_tensor_cast c -> x16", nrta_tensor_cast(tc, th, N, 0, &ret, &seq2), NRT_SUCCESS);
    expect("  *ret", ret, NRT_SUCCESS);
    check("  consecutive sequence numbers on one queue",
          NRTA_SEQ_GET_SEQ_NUM(seq2) == NRTA_SEQ_GET_SEQ_NUM(seq) + 1 && NRTA_SEQ_GET_XU_ID(seq2) == NRTA_SEQ_GET_XU_ID(seq));
    bool done = false;
    expect("nrta_is_completed", nrta_is_completed(seq2, &done), NRT_SUCCESS);
    check("  completed", done);
    expect("nrt_tensor_read x16", nrt_tensor_read(th, bf, 0, sizeof bf), NRT_SUCCESS);
    same = 1;
    for (int i = 0; i < N; i++) {
        float m = a[i] > b[i] ? a[i] : b[i];
        if (bf[i] != bf16_rne(m)) same = 0;
    }
    check("  x16 is max(a, b) rounded to nearest even", same);

    /* Every bad argument: NRT_INVALID, nothing written. */
    nrt_tensor_t *raw = NULL, *small = NULL, *other = NULL, *host = NULL, *r32 = NULL;
    expect("raw (no dtype)", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof a, "raw", &raw), NRT_SUCCESS);
    nrt_dtype_t dt = NRT_DTYPE_FLOAT32;
    expect("nrt_tensor_get_dtype raw", nrt_tensor_get_dtype(raw, &dt), NRT_SUCCESS);
    check("  NRT_DTYPE_INVALID", dt == NRT_DTYPE_INVALID);
    small = device_tensor(0, 16, NRT_DTYPE_FLOAT32, "small");
    other = device_tensor(1, sizeof a, NRT_DTYPE_FLOAT32, "on core 1");
    expect("host", nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, 0, sizeof a, "host", &host), NRT_SUCCESS);
    expect("  nrt_tensor_set_dtype", nrt_tensor_set_dtype(host, NRT_DTYPE_FLOAT32), NRT_SUCCESS);
    r32 = device_tensor(0, sizeof a, NRT_DTYPE_FP32R, "fp32r");
    expect("nrt_tensor_set_dtype 99", nrt_tensor_set_dtype(raw, (nrt_dtype_t)99), NRT_INVALID);

    expect("nrt_tensor_cast NULL src", nrt_tensor_cast(NULL, tc, N), NRT_INVALID);
    expect("nrt_tensor_cast into a tensor without dtype", nrt_tensor_cast(ta, raw, N), NRT_INVALID);
    expect("nrt_tensor_cast fp32r -> float32", nrt_tensor_cast(r32, tc, N), NRT_INVALID);
    expect("nrt_tensor_cast into 16 bytes", nrt_tensor_cast(ta, small, N), NRT_INVALID);
    expect("nrt_tensor_cast across logical cores", nrt_tensor_cast(ta, other, N), NRT_INVALID);
    expect("nrt_tensor_cast from a host tensor", nrt_tensor_cast(host, tc, N), NRT_INVALID);
    expect("nrt_tensor_compute of no source", nrt_tensor_compute(NRT_OP_ADD, srcs, 0, tc, N), NRT_INVALID);
    expect("nrt_tensor_compute NULL srcs", nrt_tensor_compute(NRT_OP_ADD, NULL, 2, tc, N), NRT_INVALID);
    expect("nrt_tensor_compute FMA", nrt_tensor_compute(NRT_OP_FMA, srcs, 2, tc, N), NRT_INVALID);
    nrt_tensor_t *mixed[] = {ta, other};
    expect("nrt_tensor_compute across logical cores", nrt_tensor_compute(NRT_OP_MIN, mixed, 2, tc, N), NRT_INVALID);
    nrt_tensor_t *with_null[] = {ta, NULL};
    expect("nrt_tensor_compute with a NULL source", nrt_tensor_compute(NRT_OP_MIN, with_null, 2, tc, N), NRT_INVALID);
    ret = NRT_SUCCESS;
    seq = 7;
    expect("nrta_tensor_cast into 16 bytes", nrta_tensor_cast(ta, small, N, 0, &ret, &seq), NRT_INVALID);
    check("  nothing queued (*ret, *req_sequence untouched)", ret == NRT_SUCCESS && seq == 7);
    expect("nrta_tensor_compute on queue 2", nrta_tensor_compute(NRT_OP_ADD, srcs, 2, tc, N, 2, &ret, &seq), NRT_INVALID);
    expect("nrt_tensor_read c", nrt_tensor_read(tc, sum, 0, sizeof sum), NRT_SUCCESS);
    memcpy(back, sum, sizeof back);
    same = 1;
    for (int i = 0; i < N; i++) {
        float m = a[i] > b[i] ? a[i] : b[i];
        if (memcmp(&back[i], &m, sizeof m) != 0) same = 0;
    }
    check("  c still holds max(a, b)", same);

    nrt_tensor_t *all[] = {ta, tb, tc, tx, th, raw, small, other, host, r32};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) nrt_tensor_free(&all[i]);
}

/* Every call refused with NRT_FAILURE: the runtime has no tensor operations. */
static void refused(void) {
    nrt_tensor_t *a = device_tensor(0, 64, NRT_DTYPE_FLOAT32, "a");
    nrt_tensor_t *b = device_tensor(0, 64, NRT_DTYPE_FLOAT32, "b");
    nrt_tensor_t *srcs[] = {a, b};
    NRT_STATUS ret = NRT_SUCCESS;
    nrta_seq_t seq = 7;
    expect("nrt_tensor_cast", nrt_tensor_cast(a, b, 16), NRT_FAILURE);
    expect("nrt_tensor_compute", nrt_tensor_compute(NRT_OP_ADD, srcs, 2, b, 16), NRT_FAILURE);
    expect("nrta_tensor_cast", nrta_tensor_cast(a, b, 16, 0, &ret, &seq), NRT_FAILURE);
    expect("nrta_tensor_compute", nrta_tensor_compute(NRT_OP_ADD, srcs, 2, b, 16, 0, &ret, &seq), NRT_FAILURE);
    check("  nothing queued", ret == NRT_SUCCESS && seq == 7);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
}

int main(int argc, char **argv) {
    int refuse = argc > 1 && strcmp(argv[1], "--refused") == 0;
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    if (refuse)
        refused();
    else
        compute_and_cast();
    nrt_close();
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
