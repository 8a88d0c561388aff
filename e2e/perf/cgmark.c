/* cgmark: valgrind client requests for `python -m e2e.perf.inproc --callgrind`, which runs under
 * `valgrind --tool=callgrind --instr-atstart=no`: the counters are zeroed and instrumentation starts at
 * the first measured pod, and the measured pods' counts are dumped (callgrind.out.<pid>.1) after the
 * last, so the total is theirs alone (no start-up, no cluster build, no init pods). Outside valgrind
 * the requests do nothing.
 */
#include <valgrind/callgrind.h>

void cgmark_start(void) {
    CALLGRIND_ZERO_STATS;
    CALLGRIND_START_INSTRUMENTATION;
}

void cgmark_stop(void) {
    CALLGRIND_STOP_INSTRUMENTATION;
    CALLGRIND_DUMP_STATS_AT("measured pods");
}

/* Between cgmark_start and cgmark_stop: count only what runs between cgmark_resume and cgmark_pause
 * (e2e.perf.bindcost counts the binding side of each round and not the scheduling cycles between). */
void cgmark_pause(void) {
    CALLGRIND_STOP_INSTRUMENTATION;
}

void cgmark_resume(void) {
    CALLGRIND_START_INSTRUMENTATION;
}
