/* StarPU 1.3 on the same shapes as dispatch.cpp, for a side-by-side
 * comparison: 200k independent tasks, a 50k chain, a 10k fork-join; empty
 * codelets; median of R runs; us per task including task creation.
 *
 *   flowd-bench-dispatch-starpu [--repeat R] [--workers 1,2] [--sched lws|eager|...]
 */
#include <starpu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void empty(void* buffers[], void* arg) {
  (void)buffers;
  (void)arg;
}

static struct starpu_codelet cl = {.cpu_funcs = {empty}, .nbuffers = 0, .name = "empty"};

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static struct starpu_task* make(void) {
  struct starpu_task* t = starpu_task_create();
  t->cl = &cl;
  return t;
}

static void submit(struct starpu_task* t) {
  if (starpu_task_submit(t) != 0) {
    fprintf(stderr, "starpu_task_submit failed\n");
    exit(1);
  }
}

/* Returns seconds for one run of the shape. */
static double run_shape(const char* shape, unsigned n) {
  const double t0 = now();
  if (!strcmp(shape, "independent")) {
    for (unsigned i = 0; i < n; ++i) submit(make());
  } else if (!strcmp(shape, "chain")) {
    struct starpu_task** ts = malloc(n * sizeof *ts);
    for (unsigned i = 0; i < n; ++i) {
      ts[i] = make();
      if (i) starpu_task_declare_deps_array(ts[i], 1, &ts[i - 1]);
    }
    for (unsigned i = 0; i < n; ++i) submit(ts[i]);
    free(ts);
  } else {
    const unsigned width = n - 2;
    struct starpu_task* root = make();
    struct starpu_task* join = make();
    struct starpu_task** mid = malloc(width * sizeof *mid);
    for (unsigned i = 0; i < width; ++i) {
      mid[i] = make();
      starpu_task_declare_deps_array(mid[i], 1, &root);
    }
    starpu_task_declare_deps_array(join, width, mid);
    submit(root);
    for (unsigned i = 0; i < width; ++i) submit(mid[i]);
    submit(join);
    free(mid);
  }
  starpu_task_wait_for_all();
  return now() - t0;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  int repeat = 7;
  char workers[64] = "1,2";
  const char* sched = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--workers") && i + 1 < argc) snprintf(workers, sizeof workers, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--sched") && i + 1 < argc) sched = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--repeat R] [--workers 1,2] [--sched NAME]\n", argv[0]);
      return 1;
    }
  }
  const char* shapes[] = {"independent", "chain", "fork-join"};
  const unsigned sizes[] = {200000, 50000, 10002};
  printf("# StarPU %d.%d dispatch benchmark (scheduler %s): median of %d runs; us per task incl. creation\n",
         STARPU_MAJOR_VERSION, STARPU_MINOR_VERSION, sched ? sched : "default", repeat);
  printf("%-12s %8s %8s %10s\n", "shape", "workers", "tasks", "total_us");
  for (char* tok = strtok(workers, ","); tok; tok = strtok(NULL, ",")) {
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = atoi(tok);
    conf.ncuda = 0;
    conf.nopencl = 0;
    if (sched) conf.sched_policy_name = sched;
    if (starpu_init(&conf) != 0) {
      fprintf(stderr, "starpu_init failed\n");
      return 1;
    }
    for (int s = 0; s < 3; ++s) {
      double* t = malloc((size_t)repeat * sizeof *t);
      run_shape(shapes[s], sizes[s]); /* warm-up */
      for (int r = 0; r < repeat; ++r) t[r] = run_shape(shapes[s], sizes[s]);
      qsort(t, (size_t)repeat, sizeof *t, cmp);
      const double med = repeat % 2 ? t[repeat / 2] : 0.5 * (t[repeat / 2 - 1] + t[repeat / 2]);
      printf("%-12s %8d %8u %10.3f\n", shapes[s], conf.ncpus, sizes[s], med * 1e6 / sizes[s]);
      fflush(stdout);
      free(t);
    }
    starpu_shutdown();
  }
  return 0;
}
