/*
 * A C client of libneffld_nrt, compiled only against include/nrt.
 *
 *   load_smoke [--guards-only] NEFF
 *
 * Checks the struct layouts at compile time, then calls the guards, nrt_init,
 * nrt_load on NEFF, nrt_get_model_tensor_info, nrt_unload and nrt_close,
 * printing each status. With --guards-only the load itself may fail (the
 * status is printed, not checked); without it every step must succeed.
 * Exit status 0 when every checked step gave the expected status.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nrt/nrt.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_status.h>

_Static_assert(sizeof(nrt_tensor_info_t) == 296, "nrt_tensor_info_t is 296 bytes");
_Static_assert(offsetof(nrt_tensor_info_t, name) == 0, "name at 0");
_Static_assert(offsetof(nrt_tensor_info_t, usage) == 256, "usage at 256");
_Static_assert(offsetof(nrt_tensor_info_t, size) == 264, "size at 264");
_Static_assert(offsetof(nrt_tensor_info_t, dtype) == 272, "dtype at 272");
_Static_assert(offsetof(nrt_tensor_info_t, shape) == 280, "shape at 280");
_Static_assert(offsetof(nrt_tensor_info_t, ndim) == 288, "ndim at 288");
_Static_assert(offsetof(nrt_tensor_info_array_t, tensor_count) == 0, "tensor_count at 0");
_Static_assert(offsetof(nrt_tensor_info_array_t, tensor_array) == 8, "tensor_array at 8");
_Static_assert(sizeof(NRT_STATUS) == 4, "NRT_STATUS is int-sized");
_Static_assert(NRT_UNINITIALIZED == 13 && NRT_CLOSED == 14 && NRT_LOAD_NOT_ENOUGH_NC == 9, "status values");

static int failures = 0;

static void expect(const char *what, NRT_STATUS got, NRT_STATUS want) {
    printf("%-40s %s (%d)\n", what, nrt_get_status_as_str(got), (int)got);
    if (got != want) {
        printf("  expected %s (%d)\n", nrt_get_status_as_str(want), (int)want);
        failures++;
    }
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

int main(int argc, char **argv) {
    int guards_only = argc > 1 && strcmp(argv[1], "--guards-only") == 0;
    const char *path = argv[argc - 1];
    if (argc < 2 || (guards_only && argc < 3)) {
        fprintf(stderr, "usage: %s [--guards-only] NEFF\n", argv[0]);
        return 2;
    }
    size_t size = 0;
    void *neff = read_file(path, &size);
    if (!neff) {
        fprintf(stderr, "cannot read %s\n", path);
        return 2;
    }
    nrt_model_t *model = NULL;

    expect("nrt_load before nrt_init", nrt_load(neff, size, -1, -1, &model), NRT_UNINITIALIZED);
    expect("nrt_load vnc_count=2 before nrt_init", nrt_load(neff, size, -1, 2, &model), NRT_INVALID);
    expect("nrt_init", nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    expect("nrt_load NULL buffer", nrt_load(NULL, size, -1, -1, &model), NRT_INVALID);
    expect("nrt_load size 0", nrt_load(neff, 0, -1, -1, &model), NRT_INVALID);
    expect("nrt_load vnc_count=2", nrt_load(neff, size, -1, 2, &model), NRT_INVALID);
    expect("nrt_unload NULL", nrt_unload(NULL), NRT_INVALID);

    /* A damaged NEFF: a non-zero status with a readable name. */
    unsigned char *bad = malloc(size);
    memcpy(bad, neff, size);
    bad[0x18] = 9; /* NEFF major version 9 */
    nrt_model_t *bad_model = NULL;
    NRT_STATUS bst = nrt_load(bad, size, 0, 1, &bad_model);
    expect("nrt_load of a damaged NEFF", bst, NRT_UNSUPPORTED_NEFF_VERSION);
    if (bst == NRT_SUCCESS || strcmp(nrt_get_status_as_str(bst), "NRT_UNSUPPORTED_NEFF_VERSION") != 0) failures++;
    free(bad);

    /* What the real client does: an explicit core, vnc_count 1. */
    NRT_STATUS st = nrt_load(neff, size, 0, 1, &model);
    if (guards_only) {
        printf("%-40s %s (%d)\n", "nrt_load (not checked)", nrt_get_status_as_str(st), (int)st);
    } else {
        expect("nrt_load", st, NRT_SUCCESS);
    }
    if (st == NRT_SUCCESS) {
        nrt_tensor_info_array_t *info = NULL;
        expect("nrt_get_model_tensor_info", nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
        if (!guards_only) {
            /* Exactly inputs x, y and output output0, with their byte sizes. */
            static const struct { const char *name; nrt_tensor_usage_t usage; size_t size; } want[] = {
                {"x", NRT_TENSOR_USAGE_INPUT, 65536},
                {"y", NRT_TENSOR_USAGE_INPUT, 65536},
                {"output0", NRT_TENSOR_USAGE_OUTPUT, 32768},
            };
            if (!info || info->tensor_count != 3) {
                printf("  expected 3 tensors\n");
                failures++;
            } else {
                for (int i = 0; i < 3; i++) {
                    const nrt_tensor_info_t *t = &info->tensor_array[i];
                    if (strcmp(t->name, want[i].name) != 0 || t->usage != want[i].usage || t->size != want[i].size) {
                        printf("  tensor %d is %s, expected %s\n", i, t->name, want[i].name);
                        failures++;
                    }
                }
            }
        }
        if (info) {
            for (uint64_t i = 0; i < info->tensor_count; i++) {
                const nrt_tensor_info_t *t = &info->tensor_array[i];
                printf("  %s %s %zu bytes dtype %d shape [", t->usage == NRT_TENSOR_USAGE_INPUT ? "input " : "output",
                       t->name, t->size, (int)t->dtype);
                for (uint32_t d = 0; d < t->ndim; d++) printf(d ? ", %u" : "%u", t->shape[d]);
                printf("]\n");
            }
            expect("nrt_free_model_tensor_info", nrt_free_model_tensor_info(info), NRT_SUCCESS);
        }
        expect("nrt_unload", nrt_unload(model), NRT_SUCCESS);
        expect("nrt_unload again", nrt_unload(model), NRT_INVALID_HANDLE);
    }
    expect("nrt_execute without a model", nrt_execute(NULL, NULL, NULL), NRT_INVALID);
    nrt_close();
    expect("nrt_load after nrt_close", nrt_load(neff, size, -1, -1, &model), NRT_CLOSED);
    free(neff);
    printf("%s\n", failures ? "FAILED" : "OK");
    return failures ? 1 : 0;
}
