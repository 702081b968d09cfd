/* bench_call.c - an empty function, alone in its translation unit so no
 * loop can inline it: the benchmarks' "bare" path (api = 3) runs the inlined
 * ring's body and passes its result through this call.  That is the call and
 * return an exported call pays, and the reloads of the ring's fields a call
 * forces on its caller's next record, with none of the exported function's
 * own work: the price of a call alone, which every exported call pays. */
#include "bench_spsc_inline.h"

bool ll_bench_bare_call(bool ok) { return ok; }
