/*
** rstatus.c — `jiti replicate status` (replica.h): a replicated world as
** etcd has it — its leader and the time left on its lease, CURRENT, the
** generation ceiling, the standbys with the revision each has applied and
** how far behind CURRENT that is.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "cli.h"
#include "replica.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: jiti replicate status --replicate URLS --world NAME [--json]\n"
          "\n"
          "Show a world replicated through etcd (docs/replication.md): the kernel that\n"
          "leads it and the seconds left on its lease, CURRENT, the generation ceiling (the\n"
          "leader hands out generations below it), and each standby with the revision its\n"
          "store has applied and its lag behind CURRENT.  Reads etcd only: it works while\n"
          "no kernel runs.\n"
          "\n"
          "options:\n"
          "  --replicate URLS  the etcd members' client URLs, comma-separated\n"
          "  --world NAME      the world\n"
          "  --json            one JSON object\n"
          "\n"
          "Exit status: 0; 1 when etcd cannot be read; 2 usage.\n");
}

int cmd_replicate(int argc, char **argv) {
  const char *urls = NULL, *world = NULL;
  int json = 0;
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_OK;
  }
  if (strcmp(argv[1], "status")) {
    fprintf(stderr, "jiti replicate: unknown subcommand '%s' (status)\n", argv[1]);
    return EXIT_USAGE;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return EXIT_OK;
    } else if ((!strcmp(argv[i], "--replicate") || !strcmp(argv[i], "--world")) && i + 1 < argc) {
      if (argv[i][2] == 'r') urls = argv[++i];
      else world = argv[++i];
    } else {
      fprintf(stderr, "jiti replicate status: unknown option '%s' (see 'jiti replicate --help')\n", argv[i]);
      return EXIT_USAGE;
    }
  }
  if (!urls || !world) {
    fprintf(stderr, "jiti replicate status: --replicate URLS and --world NAME are needed\n");
    return EXIT_USAGE;
  }
  char err[512];
  replica *r = replica_new(urls, world, err, sizeof err);
  if (!r) {
    fprintf(stderr, "jiti replicate status: %s\n", err);
    return EXIT_USAGE;
  }
  replica_Head h;
  int64_t ttl = -1;
  etcd_Range sb = {0};
  replica_Error re = replica_head(r, &h);
  if (!re) re = replica_leader_ttl(r, &h, &ttl);
  if (!re) re = replica_standbys(r, &sb);
  if (re) {
    fprintf(stderr, "jiti replicate status: %s\n", replica_errmsg(r));
    replica_free(r);
    return EXIT_FAIL;
  }
  json_t *standbys = json_array();
  for (size_t i = 0; i < sb.n; i++) {
    json_t *o = json_loadb(sb.kvs[i].value, sb.kvs[i].value_len, 0, NULL);
    if (!json_is_object(o)) {
      json_decref(o);
      continue;
    }
    json_int_t applied = json_integer_value(json_object_get(o, "revision"));
    json_object_set_new(o, "lag",
                        json_integer(h.current > (uint64_t)applied ? (json_int_t)(h.current - (uint64_t)applied) : 0));
    json_array_append_new(standbys, o);
  }
  if (json) {
    json_t *leader = h.leader[0] ? json_loads(h.leader, 0, NULL) : NULL;
    if (h.leader[0] && !leader) leader = json_string(h.leader);
    json_t *o =
      json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:O}", "world", world, "leader", leader ? leader : json_null(),
                "lease_ttl", (json_int_t)ttl, "current", (json_int_t)h.current, "ceiling", (json_int_t)h.ceiling,
                "etcd_revision", (json_int_t)h.etcd_revision, "standbys", standbys);
    char *text = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    if (text) puts(text);
    free(text);
    json_decref(o);
  } else {
    printf("world:      %s (etcd revision %" PRId64 ")\n", world, h.etcd_revision);
    if (h.leader[0]) printf("leader:     %s (lease: %" PRId64 " s left)\n", h.leader, ttl);
    else printf("leader:     none (a standby takes the world over when it next campaigns)\n");
    printf("current:    revision %" PRIu64 "\n", h.current);
    printf("generation: below %" PRIu64 "\n", h.ceiling);
    printf("standbys:   %zu\n", json_array_size(standbys));
    for (size_t i = 0; i < json_array_size(standbys); i++) {
      json_t *o = json_array_get(standbys, i);
      printf("  %s pid %" JSON_INTEGER_FORMAT " store %s: applied revision %" JSON_INTEGER_FORMAT
             " (lag %" JSON_INTEGER_FORMAT ")\n",
             json_string_value(json_object_get(o, "host")), json_integer_value(json_object_get(o, "pid")),
             json_string_value(json_object_get(o, "store")), json_integer_value(json_object_get(o, "revision")),
             json_integer_value(json_object_get(o, "lag")));
    }
  }
  json_decref(standbys);
  etcd_range_free(&sb);
  replica_free(r);
  return EXIT_OK;
}
