/*
 * A C client of the async API 3.0 (nrt/nrt_async.h), compiled only against
 * include/nrt:
 *
 *   async_smoke NEFF
 *
 * On logical core 0 of the simulated device: a tensor write and read that
 * round-trip their bytes, the sequence numbers of one queue, the NRT_STATUS
 * each request writes to *ret, eventfds registered for a queue and for a
 * sequence, the refusal of nrta_execute_schedule (the NEFF is loaded for
 * it), and NRT_QUEUE_FULL: 64 threads fill queue 1 (the first of them held
 * inside its request by a page that faults until released), and a 65th
 * request is refused. Prints each step; exit status 0 when every step gave
 * what it should.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_status.h>

_Static_assert(NRTA_XU_TENSOR_OP == 0 && NRTA_XU_COMPUTE == 1 && NRTA_XU_COLLECTIVES == 2 && NRTA_XU_TYPE_NUM == 3,
               "async API 3.0 execution units");

#define DEPTH 64 /* neffld's queue depth (nrt_async.h) */

static int failures = 0;

static void expect(const char *what, NRT_STATUS got, NRT_STATUS want) {
    printf("%-52s %s (%d)\n", what, nrt_get_status_as_str(got), (int)got);
    if (got != want) {
        printf("  expected %s (%d)\n", nrt_get_status_as_str(want), (int)want);
        failures++;
    }
}

static void check(const char *what, int ok) {
    printf("%-52s %s\n", what, ok ? "yes" : "NO");
    if (!ok) failures++;
}

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The eventfd's counter, reset to 0 (0 when nothing was signalled). */
static uint64_t drain(int fd) {
    uint64_t n = 0;
    return read(fd, &n, sizeof n) == (ssize_t)sizeof n ? n : 0;
}

/* ---- a page that holds the thread touching it until released ---- */

static unsigned char *held_page;
static sem_t faulted, release;

static void on_segv(int sig, siginfo_t *info, void *ctx) {
    (void)ctx;
    unsigned char *at = info->si_addr;
    if (at < held_page || at >= held_page + 4096) {
        signal(sig, SIG_DFL); /* a real fault: crash on return */
        return;
    }
    sem_post(&faulted);
    while (sem_wait(&release) != 0) {
    }
    mprotect(held_page, 4096, PROT_READ | PROT_WRITE);
}

struct request {
    nrt_tensor_t *tensor;
    int lnc;
    NRT_STATUS status, ret;
    nrta_seq_t seq;
};

static void *write_held(void *arg) {
    struct request *r = arg;
    r->status = nrta_tensor_write(r->tensor, held_page, 0, 64, r->lnc, 1, &r->ret, &r->seq);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void queue_full(nrt_tensor_t *tensor, int lnc) {
    held_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sem_init(&faulted, 0, 0);
    sem_init(&release, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);

    nrta_seq_t base = 0;
    expect("nrta_get_sequence (queue 1)", nrta_get_sequence((uint32_t)lnc, NRTA_XU_TENSOR_OP, 1, &base), NRT_SUCCESS);
    static struct request reqs[DEPTH];
    pthread_t threads[DEPTH];
    for (int i = 0; i < DEPTH; i++) {
        reqs[i] = (struct request){tensor, lnc, NRT_FAILURE, NRT_FAILURE, 0};
        pthread_create(&threads[i], NULL, write_held, &reqs[i]);
    }
    sem_wait(&faulted); /* one request is running, held by the page */
    bool done = true;
    NRT_STATUS st = NRT_INVALID;
    for (int i = 0; i < 10000 && st != NRT_SUCCESS; i++) { /* until the 64th is issued */
        st = nrta_is_completed(base + DEPTH, &done);
        if (st != NRT_SUCCESS) sleep_ms(1);
    }
    expect("nrta_is_completed of the 64th request", st, NRT_SUCCESS);
    check("  it is pending", !done);
    expect("nrta_is_completed of the held request", nrta_is_completed(base + 1, &done), NRT_SUCCESS);
    check("  it is pending", !done);
    unsigned char data[64] = {0};
    NRT_STATUS ret = NRT_FAILURE;
    nrta_seq_t seq = 7;
    expect("nrta_tensor_write on the full queue",
           nrta_tensor_write(tensor, data, 0, sizeof data, lnc, 1, &ret, &seq), NRT_QUEUE_FULL);
    check("  nothing queued (*ret, *req_sequence untouched)", ret == NRT_FAILURE && seq == 7);

    sem_post(&release);
    int ok = 1;
    uint64_t seen = 0;
    for (int i = 0; i < DEPTH; i++) {
        pthread_join(threads[i], NULL);
        ok &= reqs[i].status == NRT_SUCCESS && reqs[i].ret == NRT_SUCCESS;
        uint64_t k = NRTA_SEQ_GET_SEQ_NUM(reqs[i].seq) - NRTA_SEQ_GET_SEQ_NUM(base);
        if (k >= 1 && k <= DEPTH) seen |= 1ull << (k - 1);
    }
    check("the 64 held requests completed, with ids base+1..base+64", ok && seen == UINT64_MAX);
    nrta_seq_t last = 0;
    expect("nrta_get_sequence (queue 1)", nrta_get_sequence((uint32_t)lnc, NRTA_XU_TENSOR_OP, 1, &last), NRT_SUCCESS);
    check("  the last of them", last == base + DEPTH);
    expect("nrta_tensor_write on the drained queue",
           nrta_tensor_write(tensor, data, 0, sizeof data, lnc, 1, &ret, &seq), NRT_SUCCESS);
    check("  the next id", seq == base + DEPTH + 1 && ret == NRT_SUCCESS);
    signal(SIGSEGV, SIG_DFL);
    munmap(held_page, 4096);
}

static nrt_tensor_t *tensor_of(nrt_tensor_placement_t placement, int vnc, size_t size, const char *name) {
    nrt_tensor_t *t = NULL;
    if (nrt_tensor_allocate(placement, vnc, size, name, &t) != NRT_SUCCESS) failures++;
    return t;
}

static void execute_refused(const char *path) {
    size_t size = 0;
    void *neff = read_file(path, &size);
    if (!neff) {
        printf("cannot read %s\n", path);
        failures++;
        return;
    }
    nrt_model_t *model = NULL;
    expect("nrt_load", nrt_load(neff, size, 0, 1, &model), NRT_SUCCESS);
    free(neff);
    nrt_tensor_t *x = tensor_of(NRT_TENSOR_PLACEMENT_DEVICE, 0, 65536, "x");
    nrt_tensor_t *y = tensor_of(NRT_TENSOR_PLACEMENT_DEVICE, 0, 65536, "y");
    nrt_tensor_t *out = tensor_of(NRT_TENSOR_PLACEMENT_DEVICE, 0, 32768, "output0");
    nrt_tensor_set_t *in_set = NULL, *out_set = NULL;
    nrt_allocate_tensor_set(&in_set);
    nrt_allocate_tensor_set(&out_set);
    nrt_add_tensor_to_tensor_set(in_set, "x", x);
    nrt_add_tensor_to_tensor_set(in_set, "y", y);
    nrt_add_tensor_to_tensor_set(out_set, "output0", out);
    NRT_STATUS ret = NRT_QUEUE_EMPTY;
    nrta_seq_t seq = 7;
    expect("nrta_execute_schedule", nrta_execute_schedule(model, in_set, out_set, 0, &ret, &seq), NRT_FAILURE);
    check("  nothing queued (*ret, *req_sequence untouched)", ret == NRT_QUEUE_EMPTY && seq == 7);
    nrta_seq_t last = 1;
    expect("nrta_get_sequence (compute)", nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
    check("  nothing completed on the compute unit", NRTA_SEQ_GET_SEQ_NUM(last) == 0);
    nrt_destroy_tensor_set(&in_set);
    nrt_destroy_tensor_set(&out_set);
    nrt_tensor_free(&x);
    nrt_tensor_free(&y);
    nrt_tensor_free(&out);
    expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s NEFF\n", argv[0]);
        return 2;
    }
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    enum { SIZE = 4096 };
    nrt_tensor_t *t = tensor_of(NRT_TENSOR_PLACEMENT_DEVICE, 0, SIZE, "t");
    nrt_tensor_t *h = tensor_of(NRT_TENSOR_PLACEMENT_HOST, -1, SIZE, "h");
    int lnc = -5, host_lnc = -5;
    expect("nrt_tensor_get_lnc_index (device)", nrt_tensor_get_lnc_index(t, &lnc), NRT_SUCCESS);
    expect("nrt_tensor_get_lnc_index (host)", nrt_tensor_get_lnc_index(h, &host_lnc), NRT_SUCCESS);
    check("  0 and -1", lnc == 0 && host_lnc == -1);

    nrta_seq_t first = 1;
    expect("nrta_get_sequence (nothing completed yet)", nrta_get_sequence(0, NRTA_XU_TENSOR_OP, 0, &first), NRT_SUCCESS);
    check("  number 0", NRTA_SEQ_GET_SEQ_NUM(first) == 0);
    int queue_fd = eventfd(0, EFD_NONBLOCK);
    expect("nrta_event_register_xu_completion", nrta_event_register_xu_completion(0, NRTA_XU_TENSOR_OP, 0, queue_fd),
           NRT_SUCCESS);

    unsigned char data[SIZE], back[SIZE];
    for (int i = 0; i < SIZE; i++) data[i] = (unsigned char)(i * 7 + 1);
    NRT_STATUS wret = NRT_FAILURE, rret = NRT_FAILURE;
    nrta_seq_t w = 0, r = 0;
    expect("nrta_tensor_write", nrta_tensor_write(t, data, 0, SIZE, lnc, 0, &wret, &w), NRT_SUCCESS);
    expect("  *ret", wret, NRT_SUCCESS);
    check("  the queue's first id, number 1", NRTA_SEQ_GET_SEQ_NUM(w) == 1 && w == first + 1);
    memset(back, 0, sizeof back);
    expect("nrta_tensor_read", nrta_tensor_read(back, t, 0, SIZE, lnc, 0, &rret, &r), NRT_SUCCESS);
    expect("  *ret", rret, NRT_SUCCESS);
    check("  the next id", r == w + 1);
    check("  the bytes written", memcmp(back, data, SIZE) == 0);
    check("queue eventfd signalled twice", drain(queue_fd) == 2);

    nrta_seq_t last = 0;
    expect("nrta_get_sequence", nrta_get_sequence(0, NRTA_XU_TENSOR_OP, 0, &last), NRT_SUCCESS);
    check("  the read's id", last == r);
    bool done = false;
    expect("nrta_is_completed (the read)", nrta_is_completed(r, &done), NRT_SUCCESS);
    check("  completed", done);
    expect("nrta_is_completed (never issued)", nrta_is_completed(r + 1, &done), NRT_INVALID);

    int seq_fd = eventfd(0, 0); /* blocking, as a client waiting on it makes it */
    expect("nrta_event_register_seq_id_completion (done)", nrta_event_register_seq_id_completion(r, seq_fd), NRT_SUCCESS);
    uint64_t n = 0;
    check("  signalled at registration", read(seq_fd, &n, sizeof n) == (ssize_t)sizeof n && n == 1);
    expect("nrta_event_register_seq_id_completion (bad id)", nrta_event_register_seq_id_completion(r + 1, seq_fd),
           NRT_INVALID);

    expect("nrta_tensor_copy (device to host)", nrta_tensor_copy(t, 0, h, 0, SIZE, 0, &wret, &w), NRT_SUCCESS);
    check("  the next id on the source's queue", w == r + 1 && wret == NRT_SUCCESS);
    check("  the bytes copied", memcmp(nrt_tensor_get_va(h), data, SIZE) == 0);
    check("queue eventfd signalled once", drain(queue_fd) == 1);
    expect("nrta_event_register_xu_completion -1", nrta_event_register_xu_completion(0, NRTA_XU_TENSOR_OP, 0, -1),
           NRT_SUCCESS);
    expect("nrta_tensor_write", nrta_tensor_write(t, data, 0, 16, lnc, 0, &wret, &w), NRT_SUCCESS);
    check("  unregistered: not signalled", drain(queue_fd) == 0);

    execute_refused(argv[1]);
    queue_full(t, lnc);

    nrt_tensor_free(&t);
    nrt_tensor_free(&h);
    nrt_close();
    check("the client's eventfds are still open", fcntl(queue_fd, F_GETFD) != -1 && fcntl(seq_fd, F_GETFD) != -1);
    close(queue_fd);
    close(seq_fd);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
