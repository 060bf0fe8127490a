/*
 * The process-wide interrupt request and the per-thread choice to watch
 * it (base.h). The flag must be a lock-free atomic to be set from a signal
 * handler; C11 guarantees nothing less for async-signal safety.
 */
#include "base/internal.h"

_Static_assert(ATOMIC_INT_LOCK_FREE == 2,
               "the interrupt flag must be a lock-free atomic");

atomic_int sw_interrupt_flag = 0;
_Thread_local int sw_interrupt_watching = 0;

void sw_interrupt_request(void) {
    atomic_store_explicit(&sw_interrupt_flag, 1, memory_order_relaxed);
}

void sw_interrupt_clear(void) {
    atomic_store_explicit(&sw_interrupt_flag, 0, memory_order_relaxed);
}

int sw_interrupt_requested(void) {
    return atomic_load_explicit(&sw_interrupt_flag, memory_order_relaxed);
}

int sw_interrupt_watch(int watch) {
    int before = sw_interrupt_watching;
    sw_interrupt_watching = watch != 0;
    return before;
}

sw_status sw_fail_interrupted(void) {
    return sw_fail(SW_EINTERRUPTED, "operation interrupted");
}
