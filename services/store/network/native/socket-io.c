// The store's client-socket I/O in C (Linux): one epoll set of client sockets, polled by
// the event loop as a single descriptor, and write(2) and shutdown(2) without Node's
// streams. The poller reports a socket's input and, while its replies wait, that it takes
// output again.
//
// Why: at pipeline depth 1 every command is one read and one write, and Node's path for
// each (libuv's read callback, MakeCallback, the stream's onread; fs.writeSync's request
// and trace checks) cost more user-space CPU than all of Redis's per command. Here the
// event loop wakes once for every ready client, the reads of the turn are made in one C
// loop into one buffer and handed to JavaScript as one batch, in one call (ticks and
// microtasks run once, after it), and a write is a plain write(2). Parsing, flow control
// and every decision stay in JavaScript (services/store/network/native-io.ts,
// native-client-socket.ts, served-connection.ts).
//
// Built by `npm ci` (build-native.ts) when a C compiler and Node's headers are present;
// without it the store reads and writes through Node as before (STORE_NATIVE_IO).
#define NAPI_VERSION 8
#include <node_api.h>
#include <uv.h>

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <unistd.h>

/* Events taken from the kernel per poll; more ready sockets are served on the next one. */
#define EVENTS_PER_POLL 256
/* What one read asks for (Node's read size); the turn's reads land one after another in the buffer. */
#define READ_BYTES (64 * 1024)
/* Each event of a batch is EVENT_FIELDS int32s: the socket's id, where its read's bytes start in the buffer, n (the read's result). */
#define EVENT_FIELDS 3
/* An event's start when it is not a read: the socket takes output again. */
#define WRITABLE_EVENT (-1)
/* A read and a writable event per ready socket, at most. */
#define EVENTS_PER_BATCH (2 * EVENTS_PER_POLL)
#define WANT_READ 1
#define WANT_WRITE 2

typedef struct Poller {
  napi_env env;
  int epfd;
  uv_poll_t poll;
  /* onEvents(count): the first `count` events of `events`, in the order the kernel reported them. */
  napi_ref on_events;
  napi_ref buffer_ref;
  char *buffer;
  size_t buffer_len;
  napi_ref events_ref;
  int32_t *events;
  napi_ref resource_ref;
  napi_async_context async_context;
  /* watched[id] = the descriptor watched under id, or -1: a stale event is never read. */
  int *watched;
  /* interest[id]: WANT_READ | WANT_WRITE, what the epoll set asks of watched[id]. */
  unsigned char *interest;
  uint32_t watched_len;
  /* Descriptors watched: the poll keeps the event loop alive only while there are some. */
  uint32_t watching;
  int closed;
} Poller;

static napi_value throw_error(napi_env env, const char *what) {
  napi_throw_error(env, NULL, what);
  return NULL;
}

static Poller *poller_of(napi_env env, napi_value value) {
  void *p = NULL;
  if (napi_get_value_external(env, value, &p) != napi_ok || p == NULL) {
    napi_throw_type_error(env, NULL, "not a poller");
    return NULL;
  }
  Poller *poller = p;
  if (poller->closed) {
    napi_throw_error(env, NULL, "poller closed");
    return NULL;
  }
  return poller;
}

/* Hands the batch's `count` events to JavaScript; false when it threw. */
static bool hand_over(Poller *p, napi_value callback, int count) {
  if (count == 0) return true;
  napi_env env = p->env;
  napi_value receiver, argv[1];
  napi_get_undefined(env, &receiver);
  napi_create_int32(env, count, &argv[0]);
  return napi_call_function(env, receiver, callback, 1, argv, NULL) != napi_pending_exception;
}

/*
 * The ready sockets' input is read here, each read after the last in the buffer, and the
 * reads (and the sockets that take output again) go to JavaScript as one batch: one call
 * for the turn instead of one per socket, which at pipeline depth 1 is a call per command.
 * The batch is handed over early only when the buffer has no room for another read; a
 * socket whose events come after that is read once the batch before it has been handled.
 * JavaScript handles an event of a socket it has closed or paused since by what its own
 * state says (native-client-socket.ts): bytes read are never dropped unread.
 */
static void on_poll(uv_poll_t *handle, int status, int events) {
  (void)status;
  (void)events;
  Poller *p = handle->data;
  struct epoll_event ready[EVENTS_PER_POLL];
  int count;
  do count = epoll_wait(p->epfd, ready, EVENTS_PER_POLL, 0);
  while (count < 0 && errno == EINTR);
  if (count <= 0) return;
  napi_env env = p->env;
  napi_handle_scope handles;
  napi_open_handle_scope(env, &handles);
  napi_value resource, callback;
  napi_get_reference_value(env, p->resource_ref, &resource);
  napi_get_reference_value(env, p->on_events, &callback);
  napi_callback_scope scope;
  napi_open_callback_scope(env, resource, p->async_context, &scope);
  int32_t *batch = p->events;
  int batched = 0;
  size_t used = 0;
  for (int i = 0; i < count && !p->closed; i++) {
    uint32_t id = (uint32_t)(ready[i].data.u64 >> 32);
    int fd = (int)(ready[i].data.u64 & 0xffffffffu);
    uint32_t events = ready[i].events;
    /* Unwatched (or closed) by JavaScript since the kernel reported it. */
    if (id >= p->watched_len || p->watched[id] != fd) continue;
    if ((p->interest[id] & WANT_READ) && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
      if (used + READ_BYTES > p->buffer_len) {
        if (!hand_over(p, callback, batched)) goto failed;
        batched = 0;
        used = 0;
        /* What JavaScript did with that batch may have closed this socket too. */
        if (p->closed || p->watched[id] != fd || !(p->interest[id] & WANT_READ)) continue;
      }
      ssize_t n;
      do n = read(fd, p->buffer + used, READ_BYTES);
      while (n < 0 && errno == EINTR);
      if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) {
        int32_t *e = batch + batched++ * EVENT_FIELDS;
        e[0] = (int32_t)id;
        e[1] = (int32_t)used;
        e[2] = n < 0 ? -errno : (int32_t)n;
        if (n > 0) used += (size_t)n;
      }
    }
    if ((p->interest[id] & WANT_WRITE) && (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))) {
      int32_t *e = batch + batched++ * EVENT_FIELDS;
      e[0] = (int32_t)id;
      e[1] = WRITABLE_EVENT;
      e[2] = 0;
    }
  }
  if (!p->closed && !hand_over(p, callback, batched)) goto failed;
  if (0) {
  failed:;
    napi_value error;
    napi_get_and_clear_last_exception(env, &error);
    napi_fatal_exception(env, error);
  }
  napi_close_callback_scope(env, scope);
  napi_close_handle_scope(env, handles);
}

/*
 * createPoller(buffer, events, onEvents): a poller whose reads land in `buffer` (at least
 * READ_BYTES, twice that for a turn's reads to share it) and whose events go to
 * onEvents(count) through `events` (an Int32Array of EVENTS_PER_BATCH * EVENT_FIELDS).
 */
static napi_value create_poller(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  void *data, *events;
  size_t len, events_len;
  napi_typedarray_type type;
  napi_valuetype callback_type = napi_undefined;
  if (argc < 3 || napi_get_buffer_info(env, argv[0], &data, &len) != napi_ok || len < READ_BYTES ||
      napi_get_typedarray_info(env, argv[1], &type, &events_len, &events, NULL, NULL) != napi_ok || type != napi_int32_array ||
      events_len < EVENTS_PER_BATCH * EVENT_FIELDS || napi_typeof(env, argv[2], &callback_type) != napi_ok || callback_type != napi_function) {
    napi_throw_type_error(env, NULL, "createPoller(buffer of at least 64 KiB, Int32Array of eventsPerBatch * 3, onEvents)");
    return NULL;
  }
  Poller *p = calloc(1, sizeof(Poller));
  if (p == NULL) return throw_error(env, "out of memory");
  p->env = env;
  p->buffer = data;
  p->buffer_len = len;
  p->events = events;
  p->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (p->epfd < 0) {
    free(p);
    return throw_error(env, "epoll_create1 failed");
  }
  uv_loop_t *loop;
  napi_get_uv_event_loop(env, &loop);
  uv_poll_init(loop, &p->poll, p->epfd);
  p->poll.data = p;
  uv_poll_start(&p->poll, UV_READABLE, on_poll);
  uv_unref((uv_handle_t *)&p->poll);
  napi_create_reference(env, argv[0], 1, &p->buffer_ref);
  napi_create_reference(env, argv[1], 1, &p->events_ref);
  napi_create_reference(env, argv[2], 1, &p->on_events);
  napi_value resource, name;
  napi_create_object(env, &resource);
  napi_create_reference(env, resource, 1, &p->resource_ref);
  napi_create_string_utf8(env, "kvstore.clientReads", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, resource, name, &p->async_context);
  napi_value external;
  napi_create_external(env, p, NULL, NULL, &external);
  return external;
}

/*
 * Asks the epoll set for `want` (WANT_READ | WANT_WRITE) of `fd` under `id`: added,
 * changed, or (want 0) taken out. `kernel` 0: only forgotten here, for a descriptor already
 * closed (closing took it out of the set, and by then EPOLL_CTL_DEL could hit a new socket
 * given the same number). 0, or -errno (the watch then stays as it was).
 */
static int set_interest(Poller *p, uint32_t id, int fd, unsigned want, int kernel) {
  if (id >= p->watched_len) {
    if (want == 0) return 0;
    uint32_t len = p->watched_len == 0 ? 64 : p->watched_len;
    while (len <= id) len *= 2;
    int *grown = realloc(p->watched, len * sizeof(int));
    if (grown == NULL) return -ENOMEM;
    p->watched = grown;
    unsigned char *wants = realloc(p->interest, len);
    if (wants == NULL) return -ENOMEM;
    p->interest = wants;
    for (uint32_t i = p->watched_len; i < len; i++) {
      grown[i] = -1;
      wants[i] = 0;
    }
    p->watched_len = len;
  }
  int was = p->watched[id] == fd ? p->interest[id] : 0;
  if (p->watched[id] != fd && p->watched[id] >= 0) return -EBUSY; /* another socket's id */
  if (kernel && (unsigned)was != want) {
    struct epoll_event ev = { .events = (want & WANT_READ ? EPOLLIN : 0) | (want & WANT_WRITE ? EPOLLOUT : 0), .data.u64 = ((uint64_t)id << 32) | (uint32_t)fd };
    int op = was == 0 ? EPOLL_CTL_ADD : want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    if (epoll_ctl(p->epfd, op, fd, &ev) < 0 && !(op == EPOLL_CTL_ADD && errno == EEXIST)) return -errno;
  }
  if (was == 0 && want != 0 && p->watching++ == 0) uv_ref((uv_handle_t *)&p->poll);
  if (was != 0 && want == 0 && --p->watching == 0) uv_unref((uv_handle_t *)&p->poll);
  p->watched[id] = want == 0 ? -1 : fd;
  p->interest[id] = (unsigned char)want;
  return 0;
}

static unsigned interest_of(Poller *p, uint32_t id, int fd) {
  return id < p->watched_len && p->watched[id] == fd ? p->interest[id] : 0;
}

/*
 * The (poller, fd, id) every watch call takes, and in `more` (when not NULL) the argument
 * after them, or NULL; 0 with an exception pending when they are not.
 */
static int poller_fd_id(napi_env env, napi_callback_info info, Poller **p, int32_t *fd, uint32_t *id, napi_value *more) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (more != NULL) *more = argc >= 4 ? argv[3] : NULL;
  if (argc < 3) {
    napi_throw_type_error(env, NULL, "expected (poller, fd, id)");
    return 0;
  }
  *p = poller_of(env, argv[0]);
  if (*p == NULL) return 0;
  if (napi_get_value_int32(env, argv[1], fd) != napi_ok || *fd < 0) {
    napi_throw_type_error(env, NULL, "fd must be a descriptor");
    return 0;
  }
  if (napi_get_value_uint32(env, argv[2], id) != napi_ok) {
    napi_throw_type_error(env, NULL, "id must be an unsigned integer");
    return 0;
  }
  return 1;
}

static napi_value int_value(napi_env env, int32_t n) {
  napi_value out;
  napi_create_int32(env, n, &out);
  return out;
}

/* watch(poller, fd, id): 0, or -errno. The socket's reads go to onRead(id, n) until unwatch. */
static napi_value watch(napi_env env, napi_callback_info info) {
  Poller *p;
  int32_t fd;
  uint32_t id;
  if (!poller_fd_id(env, info, &p, &fd, &id, NULL)) return NULL;
  return int_value(env, set_interest(p, id, fd, interest_of(p, id, fd) | WANT_READ, 1));
}

/* unwatch(poller, fd, id): no more reads of the socket, which is still open. */
static napi_value unwatch(napi_env env, napi_callback_info info) {
  Poller *p;
  int32_t fd;
  uint32_t id;
  if (!poller_fd_id(env, info, &p, &fd, &id, NULL)) return NULL;
  set_interest(p, id, fd, interest_of(p, id, fd) & ~WANT_READ, 1);
  return NULL;
}

/* watchWrites(poller, fd, id, on): 0, or -errno. While on, onWritable(id) says the socket takes output. */
static napi_value watch_writes(napi_env env, napi_callback_info info) {
  Poller *p;
  int32_t fd;
  uint32_t id;
  napi_value arg;
  bool on = false;
  if (!poller_fd_id(env, info, &p, &fd, &id, &arg)) return NULL;
  if (arg == NULL || napi_get_value_bool(env, arg, &on) != napi_ok) return throw_error(env, "watchWrites(poller, fd, id, on)");
  unsigned was = interest_of(p, id, fd);
  return int_value(env, set_interest(p, id, fd, on ? was | WANT_WRITE : was & ~WANT_WRITE, 1));
}

/* forget(poller, fd, id): the socket under id was closed. */
static napi_value forget(napi_env env, napi_callback_info info) {
  Poller *p;
  int32_t fd;
  uint32_t id;
  if (!poller_fd_id(env, info, &p, &fd, &id, NULL)) return NULL;
  set_interest(p, id, fd, 0, 0);
  return NULL;
}

static void free_poller(uv_handle_t *handle) {
  Poller *p = handle->data;
  free(p->watched);
  free(p->interest);
  free(p);
}

/* closePoller(poller): stops polling and frees it once the event loop lets go of it. */
static napi_value close_poller(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  Poller *p = argc < 1 ? NULL : poller_of(env, argv[0]);
  if (p == NULL) return NULL;
  p->closed = 1;
  uv_poll_stop(&p->poll);
  close(p->epfd);
  napi_async_destroy(env, p->async_context);
  napi_delete_reference(env, p->on_events);
  napi_delete_reference(env, p->buffer_ref);
  napi_delete_reference(env, p->events_ref);
  napi_delete_reference(env, p->resource_ref);
  uv_close((uv_handle_t *)&p->poll, free_poller);
  return NULL;
}

/*
 * write(fd, arrayBuffer, offset, length): bytes the kernel took of arrayBuffer[offset,
 * offset + length), or -errno (-EAGAIN when it took none). An ArrayBuffer and its offset
 * rather than a Buffer: a Buffer's bytes are found through its view (~1% of the store's
 * CPU at pipeline depth 1, where every reply is a write), an ArrayBuffer's directly.
 */
static napi_value write_bytes(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd, offset, length;
  void *data;
  size_t len;
  if (argc < 4 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_arraybuffer_info(env, argv[1], &data, &len) != napi_ok ||
      napi_get_value_int32(env, argv[2], &offset) != napi_ok || napi_get_value_int32(env, argv[3], &length) != napi_ok || offset < 0 || length < 0 ||
      (size_t)offset + (size_t)length > len) {
    napi_throw_type_error(env, NULL, "write(fd, arrayBuffer, offset, length)");
    return NULL;
  }
  ssize_t n;
  do n = write(fd, (char *)data + offset, (size_t)length);
  while (n < 0 && errno == EINTR);
  napi_value out;
  napi_create_int32(env, n < 0 ? -errno : (int32_t)n, &out);
  return out;
}

/* shutdownWrite(fd): the FIN after the last reply (shutdown(SHUT_WR)); 0, or -errno. */
static napi_value shutdown_write(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t fd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok) return throw_error(env, "shutdownWrite(fd)");
  return int_value(env, shutdown(fd, SHUT_WR) < 0 ? -errno : 0);
}

// mallopt(param, value): 1 when glibc took the setting, 0 when it refused it, -1 without
// glibc. The store fixes malloc's mmap threshold with it at start-up
// (services/store/runtime/malloc-tuning.ts): GLIBC_TUNABLES does the same, but glibc reads
// it only when a process starts, so without this the store would have to exec itself again.
static napi_value set_mallopt(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t param, value;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || napi_get_value_int32(env, argv[0], &param) != napi_ok || napi_get_value_int32(env, argv[1], &value) != napi_ok) {
    napi_throw_type_error(env, NULL, "mallopt(param, value)");
    return NULL;
  }
#ifdef __GLIBC__
  int32_t result = mallopt(param, value) == 1 ? 1 : 0;
#else
  (void)param;
  (void)value;
  int32_t result = -1;
#endif
  return int_value(env, result);
}

// mapPage(bytes): a zeroed ArrayBuffer of its own mapping (mmap), unmapped when the buffer
// is detached (transfer(0)) or collected. The record arena's pages come from here
// (services/store/engine/page-source.ts): a page never passes through malloc, so a freed
// page always leaves the process, and the store needs no thread of its own to allocate them.
// The kernel maps the memory as it is first written: an unwritten page costs address space.
static void unmap_page(napi_env env, void* data, void* hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value map_page(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  double bytes = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_value_double(env, argv[0], &bytes) != napi_ok || !(bytes >= 1) || bytes > (double)SIZE_MAX / 2) {
    napi_throw_type_error(env, NULL, "mapPage(bytes): bytes must be a positive size");
    return NULL;
  }
  size_t length = (size_t)bytes;
  void* page = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (page == MAP_FAILED) {
    // As `new ArrayBuffer` says when it cannot allocate.
    napi_throw_range_error(env, NULL, "Array buffer allocation failed");
    return NULL;
  }
  napi_value out;
  if (napi_create_external_arraybuffer(env, page, length, unmap_page, (void*)(uintptr_t)length, &out) != napi_ok) {
    munmap(page, length);
    napi_throw_error(env, NULL, "mapPage: this Node refuses external array buffers");
    return NULL;
  }
  return out;
}

// releasePage(buffer): gives the memory of a page from mapPage back to the OS now
// (madvise MADV_DONTNEED) and keeps the mapping: the buffer stays usable and reads as
// zeros, its memory committed again as it is written. The arena keeps a page it has
// emptied this way for its class's next one (record-arena.ts): no mapping is made or
// unmapped, and no new page or views are made, at a class's page edge. Returns 0, or -errno.
static napi_value release_page(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void* data = NULL;
  size_t length = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_get_arraybuffer_info(env, argv[0], &data, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "releasePage(buffer): buffer must be an ArrayBuffer from mapPage");
    return NULL;
  }
  return int_value(env, length == 0 || madvise(data, length, MADV_DONTNEED) == 0 ? 0 : -errno);
}

// releaseRange(buffer, from, to): as releasePage, for the OS pages that lie wholly within
// bytes [from, to) of the page (the rest of a partly covered one may hold live bytes). The
// arena releases the free end of a size class's last page with it as records leave the
// page (record-arena.ts). Returns 0, or -errno.
static napi_value release_range(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void* data = NULL;
  size_t length = 0;
  int64_t from = 0, to = 0;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || napi_get_arraybuffer_info(env, argv[0], &data, &length) != napi_ok) {
    napi_throw_type_error(env, NULL, "releaseRange(buffer, from, to): buffer must be an ArrayBuffer from mapPage");
    return NULL;
  }
  if (napi_get_value_int64(env, argv[1], &from) != napi_ok || napi_get_value_int64(env, argv[2], &to) != napi_ok || from < 0 || to < from || (uint64_t)to > length) {
    napi_throw_range_error(env, NULL, "releaseRange(buffer, from, to): need 0 <= from <= to <= the buffer's length");
    return NULL;
  }
  const uint64_t os_page = (uint64_t)sysconf(_SC_PAGESIZE);
  const uint64_t start = ((uint64_t)from + os_page - 1) / os_page * os_page;
  const uint64_t end = (uint64_t)to / os_page * os_page;
  if (end <= start) return int_value(env, 0);
  return int_value(env, madvise((char*)data + start, end - start, MADV_DONTNEED) == 0 ? 0 : -errno);
}

// mallocTrim(done): gives the free memory of malloc's heaps back to the OS (glibc's
// malloc_trim(0)) on a thread of libuv's pool, then calls done(1 when some went back, 0 when
// none, -1 without glibc). The store calls it once it has been idle for a while
// (services/store/runtime/idle-malloc-trim.ts): the compiler's and a burst's freed blocks,
// below the mmap threshold, otherwise stay resident. Off the serving thread, as a trim of a
// large heap takes milliseconds.
typedef struct {
  napi_async_work work;
  napi_ref done;
  int32_t result;
} trim_job;

static void trim_execute(napi_env env, void* data) {
  (void)env;
  trim_job* job = data;
#ifdef __GLIBC__
  job->result = malloc_trim(0) == 1 ? 1 : 0;
#else
  job->result = -1;
#endif
}

static void trim_complete(napi_env env, napi_status status, void* data) {
  trim_job* job = data;
  napi_value done, result, global;
  if (napi_get_reference_value(env, job->done, &done) == napi_ok && done != NULL) {
    napi_create_int32(env, status == napi_ok ? job->result : -1, &result);
    napi_get_global(env, &global);
    napi_call_function(env, global, done, 1, &result, NULL);
  }
  napi_delete_reference(env, job->done);
  napi_delete_async_work(env, job->work);
  free(job);
}

static napi_value trim_malloc(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], name;
  napi_valuetype type = napi_undefined;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_function) {
    napi_throw_type_error(env, NULL, "mallocTrim(done)");
    return NULL;
  }
  trim_job* job = calloc(1, sizeof(trim_job));
  if (job == NULL) {
    napi_throw_error(env, NULL, "mallocTrim: out of memory");
    return NULL;
  }
  napi_create_reference(env, argv[0], 1, &job->done);
  napi_create_string_utf8(env, "kvstore:malloc_trim", NAPI_AUTO_LENGTH, &name);
  if (napi_create_async_work(env, NULL, name, trim_execute, trim_complete, job, &job->work) != napi_ok || napi_queue_async_work(env, job->work) != napi_ok) {
    napi_delete_reference(env, job->done);
    free(job);
    napi_throw_error(env, NULL, "mallocTrim: could not queue the work");
    return NULL;
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_property_descriptor methods[] = {
    { "createPoller", NULL, create_poller, NULL, NULL, NULL, napi_default, NULL },
    { "watch", NULL, watch, NULL, NULL, NULL, napi_default, NULL },
    { "unwatch", NULL, unwatch, NULL, NULL, NULL, napi_default, NULL },
    { "forget", NULL, forget, NULL, NULL, NULL, napi_default, NULL },
    { "watchWrites", NULL, watch_writes, NULL, NULL, NULL, napi_default, NULL },
    { "shutdownWrite", NULL, shutdown_write, NULL, NULL, NULL, napi_default, NULL },
    { "closePoller", NULL, close_poller, NULL, NULL, NULL, napi_default, NULL },
    { "writeRange", NULL, write_bytes, NULL, NULL, NULL, napi_default, NULL },
    { "mallopt", NULL, set_mallopt, NULL, NULL, NULL, napi_default, NULL },
    { "mapPage", NULL, map_page, NULL, NULL, NULL, napi_default, NULL },
    { "mallocTrim", NULL, trim_malloc, NULL, NULL, NULL, napi_default, NULL },
    { "releasePage", NULL, release_page, NULL, NULL, NULL, napi_default, NULL },
    { "releaseRange", NULL, release_range, NULL, NULL, NULL, napi_default, NULL },
  };
  napi_define_properties(env, exports, sizeof(methods) / sizeof(methods[0]), methods);
  napi_value per_batch;
  napi_create_int32(env, EVENTS_PER_BATCH, &per_batch);
  napi_set_named_property(env, exports, "eventsPerBatch", per_batch);
  return exports;
}
