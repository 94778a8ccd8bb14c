/*
 * Holds the kernel's page-fault software perf events open for the guest's whole run, so that
 * their jump labels (perf_swevent_enabled[], tested in do_user_addr_fault and mm_account_fault)
 * are patched once, at boot, and never again. Every `numascope record` opens and closes these
 * events; each first open and last close live-patches the fault path, and under multi-threaded
 * TCG another vCPU faulting at that moment can execute the patch's int3 stale ("Oops: int3" in
 * do_user_addr_fault, a guest kernel panic: run-scenarios.sh). With the keys held, the count
 * never returns to zero and the fault path is not patched during the scenarios. The events
 * count this process's own faults only; nothing is read from them.
 */
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int open_sw(unsigned long long config) {
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof a;
  a.config = config;
  a.exclude_kernel = 1;
  return (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

int main(void) {
  const unsigned long long events[] = {PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_PAGE_FAULTS_MAJ};
  int held = 0;
  for (unsigned i = 0; i < sizeof events / sizeof events[0]; i++) held += open_sw(events[i]) >= 0;
  printf("--- holdkeys: %d of 3 page-fault software events held open (fault-path jump labels stay enabled)\n", held);
  fflush(stdout);
  for (;;) pause();
}
