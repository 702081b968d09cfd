/* remote_load.h - force-included (-include) into the ring exercise's build:
 * counts every read of the other side's cursor, per thread. */
#ifndef REMOTE_LOAD_H
#define REMOTE_LOAD_H
#include <stdatomic.h>
extern _Thread_local unsigned long grade_remote_loads;
#define REMOTE_LOAD(ptr, order) (grade_remote_loads++, atomic_load_explicit((ptr), (order)))
#endif
