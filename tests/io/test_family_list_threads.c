/* Threads that fail their first config load at the same moment, each on a family the registry lacks: every one
 * must get the whole "supported: ..." list of the registry (the lists are joined once, on first use, while other
 * threads may already be reading them). Only a process's first load can race, so each round is a fresh child
 * process (forked before any thread or family list exists); a lost race shows in some rounds only. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "model/config.h"
#include "model/family.h"

#define N_THREADS 16
#define N_ROUNDS 32

typedef struct {
  const char *dir;
  xpi_status s;
  char msg[2048];
} job;

static pthread_barrier_t g_start;

static void *run(void *arg) {
  job *j = arg;
  xpi_config c;
  pthread_barrier_wait(&g_start);
  j->s = xpi_config_load(j->dir, &c);
  snprintf(j->msg, sizeof j->msg, "%s", xpi_last_error());
  return NULL;
}

/* "a, b, c" of every registered family's model_type (arch 0) or architecture (arch 1). */
static char *joined(int arch) {
  char *acc = xpi_test_strf("%s", "");
  for (size_t i = 0; i < xpi_family_count(); i++) {
    const xpi_family *f = xpi_family_at(i);
    char *next = xpi_test_strf("%s%s%s", acc, i ? ", " : "", arch ? f->architecture : f->name);
    free(acc);
    acc = next;
  }
  return acc;
}

static char *write_config(const char *tag, const char *json) {
  char *dir = xpi_test_tmpdir(tag), *p = xpi_test_strf("%s/config.json", dir);
  CHECK(xpi_test_write_file(p, json, strlen(json)) == 0, "write %s", p);
  free(p);
  return dir;
}

/* One round, in a fresh process: the threads' loads, then their messages against the registry's lists. */
static int round_in_child(const char *bad_type, const char *bad_arch) {
  static job jobs[N_THREADS];
  pthread_t th[N_THREADS];
  CHECK(pthread_barrier_init(&g_start, NULL, N_THREADS) == 0, "barrier");
  for (int i = 0; i < N_THREADS; i++) {
    jobs[i].dir = i % 2 ? bad_arch : bad_type;
    CHECK(pthread_create(&th[i], NULL, run, &jobs[i]) == 0, "thread %d", i);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&g_start);

  char *types = joined(0), *archs = joined(1);
  char *want_type = xpi_test_strf("\"model_type\" \"gemma\" is not supported (supported: %s)", types);
  char *want_arch = xpi_test_strf("\"architectures\" entry \"GemmaForCausalLM\" is not supported (supported: %s)", archs);
  for (int i = 0; i < N_THREADS; i++) {
    const char *want = i % 2 ? want_arch : want_type;
    size_t wl = strlen(want), ml = strlen(jobs[i].msg);
    CHECK(jobs[i].s == XPI_ERR_UNSUPPORTED && ml >= wl && !strcmp(jobs[i].msg + ml - wl, want),
          "thread %d: %s \"%s\", want XPI_ERR_UNSUPPORTED ending \"%s\"", i, xpi_status_name(jobs[i].s), jobs[i].msg,
          want);
  }
  CHECK(!strcmp(xpi_family_types(), types) && !strcmp(xpi_family_archs(), archs), "the lists: \"%s\"; \"%s\"",
        xpi_family_types(), xpi_family_archs());
  free(want_type);
  free(want_arch);
  free(types);
  free(archs);
  return xpi_test_failed ? 1 : 0;
}

int main(void) {
  char *bad_type = write_config("family_threads_type", "{\"model_type\":\"gemma\",\"hidden_size\":64}");
  char *bad_arch = write_config("family_threads_arch", "{\"architectures\":[\"GemmaForCausalLM\"]}");
  for (int r = 0; r < N_ROUNDS; r++) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(round_in_child(bad_type, bad_arch));
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
          "round %d: the child failed (its messages above) or did not exit (status %#x)", r, st);
  }
  for (int k = 0; k < 2; k++) {
    char *dir = k ? bad_arch : bad_type, *p = xpi_test_strf("%s/config.json", dir);
    remove(p);
    remove(dir);
    free(p);
    free(dir);
  }
  return xpi_test_done();
}
