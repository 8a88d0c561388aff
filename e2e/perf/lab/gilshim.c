/* gilshim: how much CPU a thread spends with the GIL released by an extension module (numpy).
 *
 * Loaded with LD_PRELOAD by `python -m e2e.perf.lab.parfilter --gil`. Extension modules call
 * PyEval_SaveThread / PyEval_RestoreThread through the dynamic linker (numpy's
 * NPY_BEGIN_THREADS / NPY_END_THREADS), so a preloaded definition sees each release; the
 * interpreter's own calls are bound inside libpython and are not seen (nothing in the scheduling
 * cycle sleeps or does I/O). Per thread, it adds up the thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
 * so neither waiting for a core nor waiting for the GIL counts) from each release to the moment
 * before the GIL is asked for again: work that another thread could run beside Python code.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

typedef void *(*save_fn)(void);
typedef void (*restore_fn)(void *);

static __thread long long released_at = -1;
static __thread long long free_ns;
static __thread long long releases;

static long long thread_cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

void *PyEval_SaveThread(void) {
    static save_fn real;
    if (!real) real = (save_fn)dlsym(RTLD_NEXT, "PyEval_SaveThread");
    void *state = real();
    releases++;
    released_at = thread_cpu_ns();
    return state;
}

void PyEval_RestoreThread(void *state) {
    static restore_fn real;
    if (!real) real = (restore_fn)dlsym(RTLD_NEXT, "PyEval_RestoreThread");
    if (released_at >= 0) {
        free_ns += thread_cpu_ns() - released_at;
        released_at = -1;
    }
    real(state);
}

/* The calling thread's CPU nanoseconds with the GIL released so far, and its number of releases. */
long long gilshim_free_ns(void) { return free_ns; }
long long gilshim_releases(void) { return releases; }
