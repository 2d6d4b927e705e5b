/*
 * A C client of libneffld_nrt's collectives load, compiled only against
 * include/nrt.
 *
 *   cc_load NEFF RANK WORLD
 *
 * nrt_init, then nrt_load_collectives of NEFF as rank RANK of a world of
 * WORLD ranks on the first free logical core, nrt_unload and nrt_close,
 * printing each status. Exit status 0 when the load succeeded, 1 when it
 * was refused (the status printed), 2 on a usage or setup failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include <nrt/nrt.h>
#include <nrt/nrt_status.h>

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
    *size = buf ? (size_t)n : 0;
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: cc_load NEFF RANK WORLD\n");
        return 2;
    }
    size_t size = 0;
    void *neff = read_file(argv[1], &size);
    if (!neff) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    uint32_t rank = (uint32_t)strtoul(argv[2], NULL, 10);
    uint32_t world = (uint32_t)strtoul(argv[3], NULL, 10);
    NRT_STATUS s = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    printf("nrt_init %s (%d)\n", nrt_get_status_as_str(s), (int)s);
    if (s != NRT_SUCCESS) return 2;
    nrt_model_t *model = NULL;
    s = nrt_load_collectives(neff, size, -1, -1, rank, world, &model);
    printf("nrt_load_collectives %s (%d)\n", nrt_get_status_as_str(s), (int)s);
    int rc = s == NRT_SUCCESS ? 0 : 1;
    if (s == NRT_SUCCESS) {
        s = nrt_unload(model);
        printf("nrt_unload %s (%d)\n", nrt_get_status_as_str(s), (int)s);
        if (s != NRT_SUCCESS) rc = 2;
    }
    nrt_close();
    free(neff);
    return rc;
}
