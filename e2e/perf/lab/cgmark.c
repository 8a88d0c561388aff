/* cgmark: valgrind client requests for `python -m e2e.perf.lab.inproc --callgrind`, which runs under
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

