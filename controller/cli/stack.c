/*
** stack.c — run a store command on a thread with a large stack, and make
** fresh worlds for the store commands.  Deep (bounded) recursion in
** evaluated forms and in imported entries needs more than the main
** thread's stack; the pages are only touched when used.
*/
#include <pthread.h>
#include "cli.h"
#include "jiti_world.h"

typedef struct {
  int (*cmd)(int, char **);
  int argc;
  char **argv;
  int status;
} Job;

static void *job_thread(void *p) {
  Job *j = p;
  j->status = j->cmd(j->argc, j->argv);
  return NULL;
}

int stack_run(int (*cmd)(int, char **), int argc, char **argv) {
  Job job = {cmd, argc, argv, EXIT_FAIL};
  pthread_attr_t attr;
  pthread_t th;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, STACK_SIZE) != 0 || pthread_create(&th, &attr, job_thread, &job) != 0) {
    pthread_attr_destroy(&attr);
    return cmd(argc, argv);
  }
  pthread_attr_destroy(&attr);
  pthread_join(th, NULL);
  return job.status;
}

jiti_State *stack_new_world(void) {
  jiti_State *S = jiti_open();
  if (!S) return NULL;
  jiti_set_cstack_size(S, STACK_SIZE);
  jiti_world_enable(S);
  return S;
}
