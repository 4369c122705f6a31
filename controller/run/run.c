/*
** run.c — `jiti run`: evaluate files or one expression in a fresh in-memory
** world (no daemon, no store).
*/
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "jiti_limits.h"
#include "jiti_world.h"
#include "run.h"

/* The default run_usage names. */
_Static_assert(JITI_LIMITS_RUN_DEPTH == 100000, "jiti run --help names the default depth of jiti_limits.h");

static void run_usage(FILE *out) {
  fprintf(out,
          "usage: jiti run [options] FILE...\n"
          "       jiti run [options] -e EXPR\n"
          "\n"
          "Evaluate the forms of each FILE in order, in one fresh world, printing only\n"
          "what the program prints; or print the value of EXPR (with prin1).  The\n"
          "program is read as its own READ would read it: #. evaluates while\n"
          "*read-eval* is true (the default).\n"
          "\n"
          "options:\n"
          "  -e, --eval EXPR   evaluate EXPR and print its value\n"
          "  --fuel N          evaluation steps per run (default 0 = unlimited)\n"
          "  --depth N         maximum call depth (default 100000)\n"
          "  --heap BYTES      maximum live heap bytes (default 0 = unlimited;\n"
          "                    suffixes K, M, G)\n"
          "  --output N        maximum characters printed (default 0 = unlimited)\n"
          "  --allow-foreign LIB  grant the run the C library LIB (e.g. libm.so.6): its\n"
          "                    functions may be declared with define-foreign (repeatable;\n"
          "                    docs/security.md)\n"
          "  --files DIR       copy the files under the host directory DIR into the\n"
          "                    world's file table before the program runs: DIR/a/b.lisp\n"
          "                    is the world's /a/b.lisp (load, open); what the program\n"
          "                    writes stays in the world and never reaches DIR\n"
          "  --gc-stress       collect garbage at every allocation (slow; for testing)\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 success; 1 an unhandled error or a resource limit; 2 usage;\n"
          "3 a file could not be read; 4 a reader (syntax) error.\n");
}

/* origin: the name the source's reader errors begin with ("FILE:LINE:
** COLUMN: what" says it all, as a compiler's message does). */
static int report_failure(const jiti_Result *res, const char *origin) {
  fflush(stdout);
  const char *m = res->message ? res->message : "(no message)";
  size_t n = strlen(origin);
  if (res->status == JITI_READ_ERROR && !strncmp(m, origin, n) && m[n] == ':')
    fprintf(stderr, "jiti: %s\n", m);
  else
    fprintf(stderr, "jiti: %s: %s\n", res->condition_type ? res->condition_type : "ERROR", m);
  return res->status == JITI_READ_ERROR ? 4 : 1;
}

static int run_main(int argc, char **argv);

/* A file's name as the file table's entries are named: its namestring as
** a printed string ("\"/a/b.lisp\""). */
static char *entry_name(const char *path) {
  size_t n = strlen(path);
  char *out = malloc(2 * n + 3), *p = out;
  if (!out) return NULL;
  *p++ = '"';
  for (size_t i = 0; i < n; i++) {
    if (path[i] == '"' || path[i] == '\\') *p++ = '\\';
    *p++ = path[i];
  }
  *p++ = '"';
  *p = 0;
  return out;
}

/* Copy the regular files under host directory `dir` into the world's file
** table, named from `at` ("/" for DIR itself).  Symbolic links are left
** out.  0, or a message printed and 3. */
static int import_dir(jiti_State *S, const char *dir, const char *at) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "jiti run: --files: cannot read the directory %s: %s\n", dir, strerror(errno));
    return 3;
  }
  int status = 0;
  struct dirent *e;
  while (status == 0 && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t lp = strlen(dir) + strlen(e->d_name) + 2, lw = strlen(at) + strlen(e->d_name) + 2;
    char *path = malloc(lp), *world = malloc(lw);
    if (!path || !world) { free(path); free(world); status = 1; break; }
    snprintf(path, lp, "%s/%s", dir, e->d_name);
    snprintf(world, lw, "%s%s", at, e->d_name);
    struct stat st;
    if (lstat(path, &st) != 0) {
      fprintf(stderr, "jiti run: --files: cannot read %s: %s\n", path, strerror(errno));
      status = 3;
    } else if (S_ISDIR(st.st_mode)) {
      size_t lw2 = strlen(world) + 2;
      char *sub = malloc(lw2);
      if (sub) {
        snprintf(sub, lw2, "%s/", world);
        status = import_dir(S, path, sub);
        free(sub);
      }
    } else if (S_ISREG(st.st_mode)) {
      size_t len;
      char *bytes = opts_read_file(path, &len);
      char *name = entry_name(world);
      /* the entry: 'P', the write date (universal time, LEB128), the octets */
      unsigned char *enc = bytes && name ? malloc(len + 11) : NULL;
      if (!enc) {
        fprintf(stderr, "jiti run: --files: cannot read %s: %s\n", path, bytes ? "out of memory" : strerror(errno));
        status = 3;
      } else {
        size_t k = 0;
        enc[k++] = 'P';
        uint64_t date = (uint64_t)st.st_mtime + 2208988800ULL;
        do {
          enc[k] = (unsigned char)(date & 0x7F);
          date >>= 7;
          if (date) enc[k] |= 0x80;
          k++;
        } while (date);
        memcpy(enc + k, bytes, len);
        char why[1024];
        if (jiti_import_entry(S, JITI_ENTRY_FILE, name, enc, k + len, why, sizeof why) != JITI_OK) {
          fprintf(stderr, "jiti run: --files: %s: %s\n", path, why);
          status = 1;
        }
      }
      free(enc);
      free(name);
      free(bytes);
    }
    free(path);
    free(world);
  }
  closedir(d);
  return status;
}

/* The interpreter runs on a thread with a large stack (stack.c) so that
** deep (but bounded) recursion works. */
int cmd_run(int argc, char **argv) { return stack_run(run_main, argc, argv); }

static int run_main(int argc, char **argv) {
  const char *expr = NULL;
  jiti_Limits limits = {0, JITI_LIMITS_RUN_DEPTH, 0, 0};
  int gc_stress = 0;
  int nfiles = 0, ngrant = 0;
  const char *files_dir = NULL;
  char **files = calloc((size_t)argc + 1, sizeof *files);
  const char **grant = calloc((size_t)argc + 1, sizeof *grant);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    uint64_t v;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      run_usage(stdout);
      free(files);
      free(grant);
      return 0;
    } else if (!strcmp(a, "-e") || !strcmp(a, "--eval")) {
      if (++i >= argc) {
        fprintf(stderr, "jiti run: %s needs an expression\n", a);
        free(files);
        free(grant);
        return 2;
      }
      expr = argv[i];
    } else if (!strcmp(a, "--fuel") || !strcmp(a, "--depth") || !strcmp(a, "--heap") || !strcmp(a, "--output")) {
      if (++i >= argc || !opts_size(argv[i], &v)) {
        fprintf(stderr, "jiti run: %s needs a non-negative number\n", a);
        free(files);
        free(grant);
        return 2;
      }
      if (!strcmp(a, "--fuel")) limits.fuel = v;
      else if (!strcmp(a, "--depth")) limits.depth = (uint32_t)(v > JITI_LIMITS_DEPTH_MAX ? JITI_LIMITS_DEPTH_MAX : v);
      else if (!strcmp(a, "--heap")) limits.heap = (size_t)v;
      else limits.output = (size_t)v;
    } else if (!strcmp(a, "--allow-foreign")) {
      if (++i >= argc || !*argv[i]) {
        fprintf(stderr, "jiti run: --allow-foreign needs a library (e.g. --allow-foreign libm.so.6)\n");
        free(files);
        free(grant);
        return 2;
      }
      grant[ngrant++] = argv[i];
    } else if (!strcmp(a, "--files")) {
      if (++i >= argc || !*argv[i]) {
        fprintf(stderr, "jiti run: --files needs a directory (e.g. --files tests/data)\n");
        free(files);
        free(grant);
        return 2;
      }
      files_dir = argv[i];
    } else if (!strcmp(a, "--gc-stress")) {
      gc_stress = 1;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "jiti run: unknown option %s (see 'jiti run --help')\n", a);
      free(files);
      free(grant);
      return 2;
    } else {
      files[nfiles++] = argv[i];
    }
  }
  if (!expr && nfiles == 0) {
    run_usage(stderr);
    free(files);
    free(grant);
    return 2;
  }
  jiti_State *S = jiti_open();
  if (!S) {
    fprintf(stderr, "jiti: cannot create an interpreter (out of memory?)\n");
    free(files);
    free(grant);
    return 1;
  }
  int status = 0;
  for (int i = 0; i < ngrant && status == 0; i++) {
    char why[1024];
    if (jiti_foreign_grant(S, grant[i], why, sizeof why) != JITI_OK) {
      fprintf(stderr, "jiti run: %s\n", why);
      status = 1;
    }
  }
  free(grant);
  jiti_set_limits(S, &limits);
  jiti_set_cstack_size(S, STACK_SIZE);
  if (gc_stress) jiti_set_gc_stress(S, 1);
  if (status == 0 && files_dir) status = import_dir(S, files_dir, "/");
  for (int i = 0; i < nfiles && status == 0; i++) {
    size_t len;
    char *src = opts_read_file(files[i], &len);
    if (!src) {
      fprintf(stderr, "jiti run: cannot read %s: %s\n", files[i], strerror(errno));
      status = 3;
      break;
    }
    jiti_Result res;
    /* the operator's own program: read as its READ would (#. evaluates) */
    jiti_set_source_origin(S, files[i], JITI_SOURCE_FILE | JITI_SOURCE_PROGRAM, 1, 1);
    if (jiti_eval_string(S, src, len, &res) != JITI_OK) status = report_failure(&res, files[i]);
    jiti_result_free(&res);
    free(src);
  }
  if (status == 0 && expr) {
    jiti_Result res;
    jiti_set_source_origin(S, NULL, JITI_SOURCE_PROGRAM, 1, 1);   /* "<input>" */
    if (jiti_eval_string(S, expr, strlen(expr), &res) == JITI_OK) {
      fflush(stdout);
      fwrite(res.value, 1, res.value_len, stdout);
      putchar('\n');
    } else {
      status = report_failure(&res, "<input>");
    }
    jiti_result_free(&res);
  }
  fflush(stdout);
  jiti_close(S);
  free(files);
  return status;
}
