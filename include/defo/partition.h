/*
 * defo/partition.h — a body's elements split among the processes of a
 * distributed run, and what each process computes (docs/distributed.md).
 * Partitioning sits beside the world: it sees meshes, never solvers.
 *
 *   elements → parts  METIS's k-way partition of the dual graph (elements
 *                     that share a face; when defo was built with libmetis)
 *                     or recursive coordinate bisection of the element
 *                     centroids (built in): parts of about equal size,
 *                     deterministic — every process computes the same
 *                     partition from the same mesh, no message needed.
 *   nodes → owners    a node is owned by one of the parts of its elements:
 *                     visiting nodes in index order, the candidate part
 *                     that owns the fewest nodes so far (ties: the lowest),
 *                     so the nodes on part boundaries are shared out evenly.
 *   local elements    part p computes every element that touches a node it
 *                     owns: its own elements and one layer of its
 *                     neighbours' (ghost elements), in ascending order.  So
 *                     the force and the matrix row of every owned node are
 *                     complete on p, summed in the serial order (bit for bit
 *                     a one-process evaluation); the other nodes of those
 *                     elements are p's ghosts, whose values come from their
 *                     owners.
 *   counted elements  each element's energy and statistics are counted by
 *                     exactly one part: the owner of its first node (which
 *                     computes it).
 */
#ifndef DEFO_PARTITION_H
#define DEFO_PARTITION_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_partition_method {
    DEFO_PARTITION_AUTO = 0, /* METIS when available, else RCB */
    DEFO_PARTITION_METIS = 1,
    DEFO_PARTITION_RCB = 2 /* recursive coordinate bisection of element centroids */
} defo_partition_method;

/* "auto", "metis", "rcb"; "unknown" otherwise. */
DEFO_API const char *defo_partition_method_name(defo_partition_method m);
/* 1 when defo was built with METIS (libmetis). */
DEFO_API int defo_partition_metis_available(void);

typedef struct defo_partition {
    int parts;
    defo_partition_method method; /* the one used (never AUTO) */
    defo_index num_elems, num_nodes;
    int *elem_part;  /* num_elems: the part of each element */
    int *node_owner; /* num_nodes: the part owning each node */
} defo_partition;

/* Partition mesh (tet4 or tet10) into parts >= 1 parts (more parts than
 * elements leaves some empty).  METIS when asked for but not built in:
 * DEFO_ERR_UNSUPPORTED; a node in no element: DEFO_ERR_INVALID_MESH. */
DEFO_API defo_status defo_partition_create(const defo_mesh *mesh, int parts,
                                           defo_partition_method method, defo_partition **out);
/* A partition from given element parts (each in [0, parts)): the node
 * owners by the rule above.  Tests split tiny meshes by hand with it. */
DEFO_API defo_status defo_partition_from_parts(const defo_mesh *mesh, int parts,
                                               const int *elem_part, defo_partition **out);
DEFO_API void defo_partition_destroy(defo_partition *p);

/* Part `part`'s local elements (ascending, *elems allocated, free with
 * defo_free) and, per local element, 1 when the part counts it. */
DEFO_API defo_status defo_partition_local(const defo_partition *p, const defo_mesh *mesh, int part,
                                          defo_index **elems, unsigned char **counted,
                                          defo_index *count);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_PARTITION_H */
