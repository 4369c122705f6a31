/*
** nleader.c — the address of a replicated world's leader (net.h), as the
** leader published it in its leader key's value (its identity's "listen"
** member, put with the key when it won: the address goes when the lease
** does).
*/
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "net.h"
#include "replica.h"

int net_leader_address(const char *urls, const char *world, char *addr, size_t addrlen, char *err, size_t errlen) {
  replica *r = replica_new(urls, world, err, errlen);
  if (!r) return -1;
  replica_Head h;
  replica_Error re = replica_head(r, &h);
  if (re) {
    snprintf(err, errlen, "cannot find world %s's leader: %s", world, replica_errmsg(r));
    replica_free(r);
    return -1;
  }
  if (!h.leader[0]) {
    /* a standby takes over once the lease lapses: worth waiting for; with
    ** none, no kernel is coming */
    etcd_Range sb = {0};
    int waiting = replica_standbys(r, &sb) == REPLICA_OK && sb.n > 0;
    etcd_range_free(&sb);
    replica_free(r);
    if (waiting) {
      snprintf(err, errlen, "world %s has no leader now (a standby is taking over)", world);
      return 1;
    }
    snprintf(err, errlen, "world %s has no leader and no standby: start a kernel with --replicate %s --world %s "
             "--listen tcp://HOST:PORT", world, urls, world);
    return 3;
  }
  replica_free(r);
  json_t *id = json_loads(h.leader, 0, NULL);
  const char *listen = json_string_value(json_object_get(id, "listen"));
  int rc = 0;
  if (!listen || strlen(listen) >= addrlen) {
    snprintf(err, errlen, "world %s's leader (%s) takes no clients from other machines: start it with --listen "
             "tcp://HOST:PORT", world, h.leader);
    rc = 2;
  } else {
    memcpy(addr, listen, strlen(listen) + 1);
  }
  json_decref(id);
  return rc;
}
