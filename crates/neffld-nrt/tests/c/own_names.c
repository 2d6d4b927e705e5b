/* A client's own names beside every shipped header: the headers declare
 * only what the SDK's declare. nrt_async.h once carried a declaration of
 * libc's write(), copied from the library's own import, which clashed
 * with a client's function of that name (and with <unistd.h>'s under
 * -Wredundant-decls). */
#include <nrt/nrt.h>
#include <nrt/nrt_async.h>
#include <nrt/nrt_async_sendrecv.h>
#include <nrt/nrt_experimental.h>
#include <nrt/nrt_profile.h>
#include <nrt/nrt_status.h>
#include <nrt/nrt_sys_trace.h>
#include <nrt/nrt_version.h>
#include <nrt/ndebug_stream.h>

static int write(const char *message) { return message != 0; }

int client_log(void) { return write("loaded"); }
