/* Stopping the program's other threads while code they may run is rewritten (patch.c): each is parked in a signal
 * handler that reports where it stopped, and goes on, at a new PC if it was given one, when they are released. */
#ifndef GGPROF_STOP_THREADS_H
#define GGPROF_STOP_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stops every other thread of the process (one stop at a time: a second caller waits for the first's release).
 * True when each is parked, gone, or asleep in the kernel with the signal blocked: from then to
 * ggprof_stop_release the caller makes system calls only (a parked thread may hold any lock, malloc's included).
 * False when one would not stop, or none can be stopped (no free real-time signal, /proc/self/task unreadable): why
 * says which, and every thread goes on. x86-64 only (false elsewhere). */
bool ggprof_stop_others(char *why, size_t why_len);

/* The threads the stop listed, gone ones too: ggprof_stop_thread and ggprof_stop_move take 0 .. count - 1. */
int ggprof_stop_count(void);

/* Where listed thread i stopped: true with its PC, and asleep true when it blocks the signal and sleeps in a system
 * call (it cannot be moved); false for a thread that is gone. */
bool ggprof_stop_thread(int i, uintptr_t *pc, bool *asleep);

/* Parked thread i goes on at pc when released; 0, where it stopped. */
void ggprof_stop_move(int i, uintptr_t pc);

/* Lets every stopped thread go on, and returns once each parked one has left the handler (through sigreturn, which
 * serializes its core). */
void ggprof_stop_release(void);

#endif
