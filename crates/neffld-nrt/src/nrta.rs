//! The asynchronous execution domain (`nrt_async.h`), async API 3.0 (libnrt
//! 2.31+; the 2.x entry points are not exported, see the header's comment).
//!
//! Every logical core has queues on three kinds of execution unit (XU):
//! two tensor-op queues (reads, writes, copies), one compute queue and three
//! collectives queues, as the runtime's async overview counts them. A
//! queue holds at most [`QUEUE_DEPTH`] requests, waiting or running; a
//! schedule call finding it full returns `NRT_QUEUE_FULL` and accepts
//! nothing.
//!
//! An accepted request gets the queue's next sequence number (1, 2, … in
//! the low 48 bits of its id; the top 16 bits name the queue, see
//! [`QueueId::unit`]) and runs in order of those numbers, inside the
//! schedule call of the thread that made it: tensor reads, writes and
//! copies really move their bytes on the simulated device. When it
//! completes, its `NRT_STATUS *ret` is written, the queue's last completed
//! sequence advances to it, and the eventfds registered for the queue and
//! for that sequence are signalled (an 8-byte write of 1), after the queue's
//! lock is released. So a call that returns `NRT_SUCCESS` has completed its
//! request. Only an eventfd is taken at registration ([`EventFd`]): a
//! pipe's write can raise SIGPIPE or block, a file's overwrites data. Faults a call can find
//! before accepting (a bad tensor, a window outside it, a bad core or
//! queue) are returned by the call, with nothing accepted.
//!
//! Executions and collectives cannot run on the simulated device:
//! `nrta_execute_schedule` checks its binding as `nrt_execute` does and
//! refuses at call time (`NRT_FAILURE`, one log line), accepting nothing;
//! the collectives calls are refused the same way.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use neffld::api::Runtime;
use neffld::tensor_ops::TensorJob;
use tracing::{debug, error, warn};

use crate::abi::nrt::{NrtCcOpArg, NrtDtypeArg, NrtOpArg};
use crate::abi::nrt_async::{nrta_seq_t, nrta_xu_t, NrtaXuArg, NRTA_SEQ_NUM_MASK};
use crate::abi::nrt_status::NRT_STATUS;
use crate::boundary::{guarded, non_null, NrtResult};
use crate::device::{nrt_cc_comm_t, nrt_cc_context_t, nrt_tensor_list_t};
use crate::model::nrt_model_t;
use crate::tensor::nrt_tensor_t;
use crate::tensor_set::nrt_tensor_set_t;
use crate::{execute, state, tensor, tensor_ops, unsupported};

/// Requests one queue holds at once, waiting or running. The runtime's
/// depth is not public; with requests that complete inside their call,
/// a queue fills only with requests other threads are making at the same
/// time.
pub(crate) const QUEUE_DEPTH: u64 = 64;

/// Logical cores the 12 bits of a queue id can name.
const MAX_LNC: u32 = 1 << 12;

/// Queues a logical core has on each kind of unit (`nrta_xu_t` order).
fn queues_of(xu: u32) -> Option<u32> {
    match xu {
        x if x == nrta_xu_t::NRTA_XU_TENSOR_OP as u32 => Some(2),
        x if x == nrta_xu_t::NRTA_XU_COMPUTE as u32 => Some(1),
        x if x == nrta_xu_t::NRTA_XU_COLLECTIVES as u32 => Some(3),
        _ => None,
    }
}

fn xu_name(xu: u32) -> &'static str {
    match xu {
        x if x == nrta_xu_t::NRTA_XU_TENSOR_OP as u32 => "tensor-op",
        x if x == nrta_xu_t::NRTA_XU_COMPUTE as u32 => "compute",
        _ => "collectives",
    }
}

/// One queue: (logical core, kind of unit, queue index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct QueueId {
    lnc: u32,
    xu: u32,
    queue: u32,
}

impl QueueId {
    /// The top 16 bits of the queue's sequence ids (what
    /// `NRTA_SEQ_GET_XU_ID` gives): the core in 12 bits, then the kind of
    /// unit and the queue in 2 bits each. neffld's own numbering: the
    /// runtime's is not public.
    fn unit(self) -> u64 {
        u64::from((self.lnc << 4) | (self.xu << 2) | self.queue) << 48
    }

    /// The queue a sequence id names, when it names one a core can have.
    fn of_seq(seq: nrta_seq_t) -> Option<QueueId> {
        let id = (seq >> 48) as u32;
        let q = QueueId {
            lnc: id >> 4,
            xu: (id >> 2) & 3,
            queue: id & 3,
        };
        (q.queue < queues_of(q.xu)?).then_some(q)
    }

    /// The queue the arguments name on `rt`, or `NRT_INVALID` naming the
    /// argument that is out of range.
    fn of_args(
        api: &str,
        rt: &Runtime,
        lnc: i64,
        xu: u32,
        queue: c_int,
    ) -> Result<Self, NRT_STATUS> {
        let visible = rt.visible_vnc_count().min(MAX_LNC);
        let Some(lnc) = u32::try_from(lnc).ok().filter(|&l| l < visible) else {
            error!(
                "{api}: logical core {lnc} is not visible (0 to {})",
                visible.saturating_sub(1)
            );
            return Err(NRT_STATUS::NRT_INVALID);
        };
        let Some(n) = queues_of(xu) else {
            error!(
                "{api}: {xu} is not an execution unit type (0 to {})",
                nrta_xu_t::NRTA_XU_TYPE_NUM as u32 - 1
            );
            return Err(NRT_STATUS::NRT_INVALID);
        };
        let Some(queue) = u32::try_from(queue).ok().filter(|&q| q < n) else {
            error!(
                "{api}: queue {queue} does not exist: the {} unit has queues 0 to {}",
                xu_name(xu),
                n - 1
            );
            return Err(NRT_STATUS::NRT_INVALID);
        };
        Ok(QueueId { lnc, xu, queue })
    }
}

impl std::fmt::Display for QueueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "queue {} of the {} unit of logical core {}",
            self.queue,
            xu_name(self.xu),
            self.lnc
        )
    }
}

/// A queue's numbers and the eventfds registered on it.
#[derive(Debug, Default)]
struct QueueState {
    /// The last sequence number issued (0: none yet).
    issued: u64,
    /// The last sequence number completed; requests complete in order.
    completed: u64,
    /// The eventfd signalled at every completion on the queue.
    xu_fd: Option<EventFd>,
    /// Eventfds signalled when one pending sequence number completes.
    seq_fds: BTreeMap<u64, EventFd>,
}

#[derive(Debug, Default)]
struct Queue {
    state: Mutex<QueueState>,
    /// Notified at every completion: the next request may run.
    turn: Condvar,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

static QUEUES: Mutex<BTreeMap<QueueId, Arc<Queue>>> = Mutex::new(BTreeMap::new());

fn queues() -> MutexGuard<'static, BTreeMap<QueueId, Arc<Queue>>> {
    QUEUES.lock().unwrap_or_else(|p| p.into_inner())
}

/// The queue `id`, made on first use.
fn queue(id: QueueId) -> Arc<Queue> {
    Arc::clone(queues().entry(id).or_default())
}

/// Forgets every eventfd registration (`nrt_close`: the client may close
/// its descriptors afterwards). Sequence numbers keep rising across
/// `nrt_init`s, so an id is never issued twice in a process.
pub(crate) fn forget_registrations() {
    for q in queues().values() {
        let mut s = q.lock();
        s.xu_fd = None;
        s.seq_fds.clear();
    }
}

/// A client's eventfd, as `fstat` saw it at registration. The descriptor
/// stays the client's, who may close it and reuse its number for another
/// file: signalling writes only while the number still names that file.
#[derive(Clone, Copy, Debug)]
struct EventFd {
    fd: c_int,
    dev: u64,
    ino: u64,
}

/// `fstat` of `fd`, or the error it gave.
fn stat_of(fd: c_int) -> std::io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `st` is writable for one `stat`; any descriptor value is safe
    // to pass (a bad one gives EBADF).
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fstat` succeeded, so it filled `st`.
    Ok(unsafe { st.assume_init() })
}

impl EventFd {
    /// `fd` when it is an eventfd, else `NRT_INVALID` saying what it is.
    /// The kernel names an eventfd's file `anon_inode:[eventfd]` (what
    /// `/proc/self/fd` shows); where `/proc` is not mounted, an anonymous
    /// inode (no file type) is taken, which a pipe, a socket, a FIFO, a
    /// device or a regular file never is.
    fn of(api: &str, fd: c_int) -> Result<EventFd, NRT_STATUS> {
        let refuse = |what: String| {
            error!("{api}: file descriptor {fd} {what}; register an eventfd (eventfd(2)), or -1 to unregister");
            Err(NRT_STATUS::NRT_INVALID)
        };
        let st = match stat_of(fd) {
            Ok(st) => st,
            Err(e) => return refuse(format!("cannot be used ({e})")),
        };
        match std::fs::read_link(format!("/proc/self/fd/{fd}")) {
            Ok(link) if link.as_os_str() == "anon_inode:[eventfd]" => {}
            Ok(link) => return refuse(format!("is not an eventfd: it is {}", link.display())),
            Err(_) if st.st_mode & libc::S_IFMT == 0 => {}
            Err(_) => return refuse("is not an eventfd".to_string()),
        }
        Ok(EventFd {
            fd,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// Adds 1 to the eventfd's counter. Never blocks and never writes to
    /// another kind of file: a number that no longer names the file
    /// registered (closed, or reused for a pipe or a file) and a counter
    /// with no room left (a blocking eventfd's write would wait for a
    /// read) are logged and skipped. A failure is not returned: the request
    /// has completed.
    fn signal(self) {
        let fd = self.fd;
        let skip = |why: &str| warn!("cannot signal a completion on file descriptor {fd}: {why}");
        match stat_of(fd) {
            Ok(st) if (st.st_dev, st.st_ino) == (self.dev, self.ino) => {}
            Ok(_) => return skip("it is no longer the eventfd registered"),
            Err(e) => return skip(&e.to_string()),
        }
        let mut ready = libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one valid `pollfd`; a zero timeout never waits.
        let n = unsafe { libc::poll(&mut ready, 1, 0) };
        if n != 1 || ready.revents & libc::POLLOUT == 0 {
            return skip("its counter is full (the client has not read it)");
        }
        let one: u64 = 1;
        // SAFETY: `one` is 8 readable bytes that outlive the call, which
        // does not keep the pointer; `fd` is an eventfd with room for 1
        // (checked just above), whose write neither blocks nor raises a
        // signal.
        let n = unsafe { libc::write(fd, (&one as *const u64).cast::<c_void>(), 8) };
        if n != 8 {
            skip(&std::io::Error::last_os_error().to_string());
        }
    }
}

/// An accepted request at the head of its queue. Finishing it (or dropping
/// it: a panic gives `NRT_FAILURE`) completes it.
struct Turn {
    queue: Arc<Queue>,
    n: u64,
    ret: *mut NRT_STATUS,
    finished: bool,
}

impl Turn {
    fn finish(&mut self, status: NRT_STATUS) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if !self.ret.is_null() {
            // SAFETY: the schedule call's contract: `ret` NULL or writable
            // until the request completes, which is now.
            unsafe { *self.ret = status };
        }
        let mut s = self.queue.lock();
        s.completed = self.n;
        let seq_fd = s.seq_fds.remove(&self.n);
        let fds: Vec<EventFd> = s.xu_fd.into_iter().chain(seq_fd).collect();
        drop(s);
        self.queue.turn.notify_all();
        // Outside the lock: a client's descriptor never holds up the queue.
        for fd in fds {
            fd.signal();
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.finish(NRT_STATUS::NRT_FAILURE);
    }
}

/// Accepts a request on queue `id` (`NRT_QUEUE_FULL` when it holds
/// [`QUEUE_DEPTH`]), writes its id to `*req_sequence`, waits for the
/// requests before it, runs `op` and completes the request with its status.
///
/// # Safety
/// `ret` and `req_sequence` must each be NULL or writable (`ret` until the
/// call returns).
unsafe fn submit(
    api: &str,
    id: QueueId,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
    op: impl FnOnce() -> NrtResult,
) -> NrtResult {
    let queue = queue(id);
    let n = {
        let mut s = queue.lock();
        if s.issued - s.completed >= QUEUE_DEPTH {
            error!("{api}: {id} is full ({QUEUE_DEPTH} requests)");
            return Err(NRT_STATUS::NRT_QUEUE_FULL);
        }
        if s.issued == NRTA_SEQ_NUM_MASK {
            error!("{api}: {id} has issued every sequence number");
            return Err(NRT_STATUS::NRT_FAILURE);
        }
        s.issued += 1;
        s.issued
    };
    if !req_sequence.is_null() {
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *req_sequence = id.unit() | n };
    }
    let mut turn = Turn {
        queue,
        n,
        ret,
        finished: false,
    };
    {
        let mut s = turn.queue.lock();
        while s.completed + 1 < n {
            s = turn.queue.turn.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
    let status = match op() {
        Ok(()) => NRT_STATUS::NRT_SUCCESS,
        Err(s) => s,
    };
    debug!("{api}: request {n} on {id} completed: {status:?}");
    turn.finish(status);
    Ok(())
}

/// Queues a write of `size` bytes of `buf` into the tensor at `offset` on
/// tensor-op queue `queue` of logical core `lnc_idx`; the write completes
/// inside the call. `*req_sequence` receives the request's id, `*ret` its
/// status when it completes. `NRT_QUEUE_FULL` when the queue holds 64
/// requests; `NRT_INVALID` (nothing queued) for a bad tensor, window, core
/// or queue.
///
/// Async API 3.0 (libnrt 2.31+). Inferred: the `lnc_idx` parameter (named
/// by the release notes, placed and typed as a 2.31+ client passes it; the
/// API documentation's 7-parameter form omits it). It chooses the queue; a
/// device tensor on another logical core is not refused (clients pass the
/// tensor's own, `nrt_tensor_get_lnc_index`).
///
/// # Safety
/// `buf` must be NULL or point to `size` readable bytes; `ret` and
/// `req_sequence` must each be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_write(
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    offset: u64,
    size: u64,
    lnc_idx: c_int,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    let op = |size| tensor::write(tensor, buf, offset, size);
    // SAFETY: forwarded from this function's contract.
    unsafe {
        transfer(
            "nrta_tensor_write",
            tensor,
            buf,
            (offset, size),
            (lnc_idx, queue),
            (ret, req_sequence),
            op,
        )
    }
}

/// Queues a read of `size` bytes at `offset` of the tensor into `buf`, as
/// [`nrta_tensor_write`] queues a write.
///
/// Async API 3.0 (libnrt 2.31+). Inferred: the `lnc_idx` parameter, as
/// for `nrta_tensor_write`.
///
/// # Safety
/// `buf` must be NULL or point to `size` writable bytes; `ret` and
/// `req_sequence` must each be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_read(
    buf: *mut c_void,
    tensor: *mut nrt_tensor_t,
    offset: u64,
    size: u64,
    lnc_idx: c_int,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    let op = |size| tensor::read(tensor, buf, offset, size);
    // SAFETY: forwarded from this function's contract.
    unsafe {
        transfer(
            "nrta_tensor_read",
            tensor,
            buf.cast_const(),
            (offset, size),
            (lnc_idx, queue),
            (ret, req_sequence),
            op,
        )
    }
}

/// What a tensor write and a read check before the request is accepted —
/// the tensor-op queue `queue` of logical core `lnc_idx`, the tensor's
/// window of `size` bytes at `offset`, the buffer — and their submission;
/// `op` moves the bytes when the request runs.
///
/// # Safety
/// As [`submit`]'s, and `op` may rely on the checks made here.
unsafe fn transfer(
    api: &'static str,
    tensor: *mut nrt_tensor_t,
    buf: *const c_void,
    (offset, size): (u64, u64),
    (lnc_idx, queue): (c_int, c_int),
    (ret, req_sequence): (*mut NRT_STATUS, *mut nrta_seq_t),
    op: impl FnOnce(usize) -> NrtResult,
) -> NRT_STATUS {
    guarded(api, || {
        let rt = state::runtime()?;
        let id = QueueId::of_args(
            api,
            &rt,
            lnc_idx.into(),
            nrta_xu_t::NRTA_XU_TENSOR_OP as u32,
            queue,
        )?;
        let size = usize::try_from(size).map_err(|_| NRT_STATUS::NRT_INVALID)?;
        tensor::check_window(api, tensor, offset, size as u64)?;
        non_null(api, "buf", buf)?;
        // SAFETY: forwarded from this function's contract.
        unsafe { submit(api, id, ret, req_sequence, || op(size)) }
    })
}

/// Queues a copy of `size` bytes between tensors (as `nrt_tensor_copy`) on
/// tensor-op queue `queue` of the source's logical core (else the
/// destination's, else core 0 for two host tensors).
///
/// Async API 3.0 as the API documentation gives it (`NRT_STATUS *ret`, no
/// `lnc_idx`): whether 2.31+ added `lnc_idx` here too is not public.
/// Inferred: the core whose queue is used.
///
/// # Safety
/// `ret` and `req_sequence` must each be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_copy(
    src: *mut nrt_tensor_t,
    src_offset: u64,
    dst: *mut nrt_tensor_t,
    dst_offset: u64,
    size: u64,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    const API: &str = "nrta_tensor_copy";
    guarded(API, || {
        let rt = state::runtime()?;
        tensor::check_window(API, src, src_offset, size)?;
        tensor::check_window(API, dst, dst_offset, size)?;
        let (a, b) = (tensor::lnc_of(API, src)?, tensor::lnc_of(API, dst)?);
        if let (Some(a), Some(b)) = (a, b) {
            if a != b {
                error!("{API}: the tensors are on different logical cores ({a} and {b})");
                return Err(NRT_STATUS::NRT_INVALID);
            }
        }
        let lnc = a.or(b).unwrap_or(0);
        let id = QueueId::of_args(
            API,
            &rt,
            lnc.into(),
            nrta_xu_t::NRTA_XU_TENSOR_OP as u32,
            queue,
        )?;
        // SAFETY: forwarded from this function's contract.
        unsafe {
            submit(API, id, ret, req_sequence, || {
                tensor::copy(src, src_offset, dst, dst_offset, size)
            })
        }
    })
}

/// Queues `nrt_tensor_cast` of `num_elements` elements of `src` into
/// `dst` on tensor-op queue `queue` of the tensors' logical core; it
/// completes inside the call, as the tensor writes do. Everything
/// `nrt_tensor_cast` refuses is refused by the call with its status,
/// nothing queued; `NRT_INVALID` too for a queue that does not exist.
///
/// libnrt 2.35. Inferred: the prototype (`nrt_tensor_cast`'s arguments,
/// `num_elements` as `nrta_tensor_copy` types a size, then this header's
/// `queue`, `ret` and `req_sequence`; no `lnc_idx`, the tensors name their
/// core) and the tensor-op unit.
///
/// # Safety
/// `ret` and `req_sequence` must each be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_cast(
    src: *const nrt_tensor_t,
    dst: *mut nrt_tensor_t,
    num_elements: u64,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    const API: &str = "nrta_tensor_cast";
    guarded(API, || {
        tensor_ops::cast(API, src, dst, num_elements, |rt, job| {
            // SAFETY: forwarded from this function's contract.
            unsafe { schedule(API, rt, job, queue, (ret, req_sequence)) }
        })
    })
}

/// Queues `nrt_tensor_compute` of `op` across the `num_srcs` tensors of
/// `srcs` into `dst` on tensor-op queue `queue` of the tensors' logical
/// core, as [`nrta_tensor_cast`] queues a cast.
///
/// libnrt 2.35. Inferred: the prototype (`nrt_tensor_compute`'s
/// arguments, then `queue`, `ret` and `req_sequence`) and the tensor-op
/// unit (the compute unit runs NEFFs).
///
/// # Safety
/// `srcs` must be NULL or point to `num_srcs` readable pointers; `ret` and
/// `req_sequence` must each be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_tensor_compute(
    op: NrtOpArg,
    srcs: *const *mut nrt_tensor_t,
    num_srcs: u32,
    dst: *mut nrt_tensor_t,
    num_elements: u64,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    const API: &str = "nrta_tensor_compute";
    // SAFETY: forwarded from this function's contract.
    guarded(API, || unsafe {
        tensor_ops::compute(API, op, (srcs, num_srcs), dst, num_elements, |rt, job| {
            schedule(API, rt, job, queue, (ret, req_sequence))
        })
    })
}

/// Submits a checked tensor operation on tensor-op queue `queue` of its
/// logical core.
///
/// # Safety
/// As [`submit`]'s.
unsafe fn schedule(
    api: &'static str,
    rt: &Arc<Runtime>,
    job: &TensorJob<'_>,
    queue: c_int,
    (ret, req_sequence): (*mut NRT_STATUS, *mut nrta_seq_t),
) -> NrtResult {
    let xu = nrta_xu_t::NRTA_XU_TENSOR_OP as u32;
    let id = QueueId::of_args(api, rt, job.vnc().into(), xu, queue)?;
    // SAFETY: forwarded from this function's contract.
    unsafe { submit(api, id, ret, req_sequence, || tensor_ops::run(api, rt, job)) }
}

/// Checks the tensor binding as `nrt_execute` does (`NRT_INVALID` naming
/// the tensor), then refuses at once (`NRT_FAILURE`): nothing executes on
/// the simulated device. Nothing is queued; `*ret` and `*req_sequence` are
/// not written.
#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn nrta_execute_schedule(
    model: *mut nrt_model_t,
    input: *const nrt_tensor_set_t,
    output: *mut nrt_tensor_set_t,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    guarded("nrta_execute_schedule", || {
        execute::execute("nrta_execute_schedule", model, input, output)
    })
}

/// Refused (`NRT_FAILURE`): no collectives.
#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn nrta_cc_prepare(
    comm: *mut nrt_cc_comm_t,
    input: *mut nrt_tensor_list_t,
    output: *mut nrt_tensor_list_t,
    dtype: NrtDtypeArg,
    op: NrtOpArg,
    cc_op: NrtCcOpArg,
    cc_ctx: *mut *mut nrt_cc_context_t,
) -> NRT_STATUS {
    unsupported::call("nrta_cc_prepare")
}

/// Refused (`NRT_FAILURE`): no collectives. Nothing is queued.
#[no_mangle]
#[allow(unused_variables)]
pub extern "C" fn nrta_cc_schedule(
    cc_ctx: *mut *mut nrt_cc_context_t,
    queue: c_int,
    ret: *mut NRT_STATUS,
    req_sequence: *mut nrta_seq_t,
) -> NRT_STATUS {
    unsupported::call("nrta_cc_schedule")
}

/// The queue and sequence number of an issued id, else `NRT_INVALID`.
fn issued(api: &str, seq: nrta_seq_t) -> Result<(Arc<Queue>, u64), NRT_STATUS> {
    let n = seq & NRTA_SEQ_NUM_MASK;
    let found = QueueId::of_seq(seq).and_then(|id| queues().get(&id).cloned());
    match found {
        Some(q) if n != 0 && n <= q.lock().issued => Ok((q, n)),
        _ => {
            error!("{api}: sequence {seq:#x} was never issued");
            Err(NRT_STATUS::NRT_INVALID)
        }
    }
}

/// Whether the request `seq` has completed: false while it waits or runs,
/// true after; `NRT_INVALID` for an id never issued.
///
/// # Safety
/// `is_completed` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_is_completed(seq: nrta_seq_t, is_completed: *mut bool) -> NRT_STATUS {
    const API: &str = "nrta_is_completed";
    guarded(API, || {
        non_null(API, "is_completed", is_completed)?;
        let (q, n) = issued(API, seq)?;
        let done = n <= q.lock().completed;
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *is_completed = done };
        Ok(())
    })
}

/// Writes the id of the last completed request of queue `queue` of unit
/// `xu` on logical core `lnc` (its sequence number 0 when none has
/// completed). `NRT_INVALID` for a core, unit or queue that does not exist.
///
/// # Safety
/// `seq` must be NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn nrta_get_sequence(
    lnc: u32,
    xu: NrtaXuArg,
    queue: c_int,
    seq: *mut nrta_seq_t,
) -> NRT_STATUS {
    const API: &str = "nrta_get_sequence";
    guarded(API, || {
        let rt = state::runtime()?;
        non_null(API, "seq", seq)?;
        let id = QueueId::of_args(API, &rt, lnc.into(), xu, queue)?;
        let last = self::queue(id).lock().completed;
        // SAFETY: non-NULL and writable per this function's contract.
        unsafe { *seq = id.unit() | last };
        Ok(())
    })
}

/// Registers eventfd `fd` to be signalled (an 8-byte write of 1) at every
/// completion on queue `queue` of unit `xu` on logical core `lnc`,
/// replacing an earlier registration; `fd` -1 unregisters. The descriptor
/// stays the caller's: it is never closed here, and must stay open while
/// registered. `nrt_close` drops every registration. `NRT_INVALID` for a
/// descriptor that is not an eventfd (a pipe, a socket, a file): their
/// writes could raise SIGPIPE, block, or overwrite data. Signalling never
/// blocks: a number closed and reused for another file since, or an
/// eventfd whose counter is full, is skipped with a warning.
///
/// libnrt 2.32+. Inferred: the signature (from the release notes' name and
/// a client's calls; `lnc` typed as in `nrta_get_sequence`) and the
/// signalling.
#[no_mangle]
pub extern "C" fn nrta_event_register_xu_completion(
    lnc: u32,
    xu: NrtaXuArg,
    queue: c_int,
    fd: c_int,
) -> NRT_STATUS {
    const API: &str = "nrta_event_register_xu_completion";
    guarded(API, || {
        let rt = state::runtime()?;
        let id = QueueId::of_args(API, &rt, lnc.into(), xu, queue)?;
        let fd = registered(API, fd)?;
        self::queue(id).lock().xu_fd = fd;
        Ok(())
    })
}

/// Registers eventfd `fd` to be signalled (an 8-byte write of 1) when the
/// request `seq` completes — at once when it already has (then nothing
/// stays registered); `fd` -1 unregisters. `NRT_INVALID` for an id never
/// issued. The descriptor stays the caller's and must be an eventfd, as
/// for `nrta_event_register_xu_completion`.
///
/// libnrt 2.32+. Inferred: the signature (from the migration guide's call
/// and a client's) and the signalling.
#[no_mangle]
pub extern "C" fn nrta_event_register_seq_id_completion(seq: nrta_seq_t, fd: c_int) -> NRT_STATUS {
    const API: &str = "nrta_event_register_seq_id_completion";
    guarded(API, || {
        state::runtime()?;
        let fd = registered(API, fd)?;
        let (q, n) = issued(API, seq)?;
        let mut s = q.lock();
        match fd {
            None => {
                s.seq_fds.remove(&n);
            }
            Some(fd) if n <= s.completed => {
                drop(s);
                fd.signal();
            }
            Some(fd) => {
                s.seq_fds.insert(n, fd);
            }
        }
        Ok(())
    })
}

/// What a registration names: an eventfd, or nothing for -1; any other
/// value or kind of file is `NRT_INVALID`.
fn registered(api: &str, fd: c_int) -> Result<Option<EventFd>, NRT_STATUS> {
    match fd {
        -1 => Ok(None),
        fd if fd < 0 => {
            error!("{api}: {fd} is not a file descriptor (nor -1, which unregisters)");
            Err(NRT_STATUS::NRT_INVALID)
        }
        fd => EventFd::of(api, fd).map(Some),
    }
}
