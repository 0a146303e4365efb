/*
 * cli/cmd_info.c — `defo info MESH [--json]`: what defo sees in a mesh file.
 *
 * Like cholmod_check_*: counts, order, volume, bounding box, element quality
 * (dihedral angles, aspect ratio, histogram), elements that are inverted or
 * flat as stored, boundary faces and connected components.
 *
 * The mesh is reported as the file holds it, never reoriented or refused: a
 * frame of a simulation may well have inverted or flat elements, and that is
 * what a user inspects it for.  "inverted" counts elements whose corners are
 * negatively oriented (det[x1-x0, x2-x0, x3-x0] < 0), "flat" those whose
 * corner volume is zero relative to their size (|det| <= 1e-12 L^3, L the
 * longest corner edge); the volume is the signed sum.  (Where a REST mesh is
 * built for a simulation, defo reorients negatively oriented elements and
 * refuses flat ones.)  JSON keys are a
 * contract scripts rely on: nodes, elements, order, volume, bbox_min,
 * bbox_max, inverted, min_dihedral_deg, max_dihedral_deg, boundary_faces,
 * components, jacobian_quality.
 *
 * tet10: the volume is exact for curved elements (defo_element_volume; the
 * straight-sided volume through the corners is given beside it), and the
 * Jacobian quality of every element (defo_element_jacobian_quality: the
 * smallest det J over the element divided by det J of its straight corner
 * tetrahedron; 1 = straight, <= 0 = the curved map folds) is summarised by
 * its worst value, that element and a histogram over JQ_BINS.
 */
#include "cli/cli.h"
#include "defo/element.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Surface statistics: enclosed volume (divergence theorem), edges used other
 * than twice (0 for a closed manifold), triangle components. */
typedef struct surface_stats {
    double volume;
    long long open_edges;
    long long components;
} surface_stats;

typedef struct edge_key {
    defo_index a, b;
} edge_key;

static int edge_cmp(const void *pa, const void *pb) {
    const edge_key *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    return (x->b > y->b) - (x->b < y->b);
}

static defo_index uf_find(defo_index *parent, defo_index i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static int surface_statistics(const defo_mesh *m, surface_stats *st) {
    memset(st, 0, sizeof *st);
    int k = m->nodes_per_tri;
    size_t nt = (size_t)m->num_tris;
    edge_key *edges = malloc((nt * 3 + 1) * sizeof *edges);
    defo_index *parent = malloc(((size_t)m->num_nodes + 1) * sizeof *parent);
    if (!edges || !parent) {
        free(edges);
        free(parent);
        return -1;
    }
    for (defo_index i = 0; i < m->num_nodes; i++) parent[i] = i;
    for (size_t t = 0; t < nt; t++) {
        const defo_index *tri = m->tris + t * (size_t)k;
        defo_vec3 a = defo_v3_load(m->x + 3 * tri[0]);
        defo_vec3 b = defo_v3_load(m->x + 3 * tri[1]);
        defo_vec3 c = defo_v3_load(m->x + 3 * tri[2]);
        st->volume += defo_v3_dot(a, defo_v3_cross(b, c)) / 6.0;
        for (int e = 0; e < 3; e++) {
            defo_index u = tri[e], v = tri[(e + 1) % 3];
            edges[3 * t + (size_t)e] = (edge_key){u < v ? u : v, u < v ? v : u};
            defo_index ru = uf_find(parent, u), rv = uf_find(parent, v);
            if (ru != rv) parent[ru < rv ? rv : ru] = ru < rv ? ru : rv;
        }
    }
    qsort(edges, nt * 3, sizeof *edges, edge_cmp);
    for (size_t i = 0; i < nt * 3;) {
        size_t j = i;
        while (j < nt * 3 && edges[j].a == edges[i].a && edges[j].b == edges[i].b) j++;
        if (j - i != 2) st->open_edges++;
        i = j;
    }
    /* Components among nodes used by triangles. */
    char *used = calloc((size_t)m->num_nodes + 1, 1);
    if (used) {
        for (size_t t = 0; t < nt * (size_t)k; t++) used[m->tris[t]] = 1;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (used[i] && uf_find(parent, i) == i) st->components++;
        free(used);
    }
    free(edges);
    free(parent);
    return 0;
}

/* Jacobian quality histogram: <= 0, (0, 0.25), [0.25, 0.5), [0.5, 0.75),
 * [0.75, 0.95), >= 0.95 (straight elements and better). */
#define JQ_BINS 6
static const double jq_edges[JQ_BINS - 1] = {0, 0.25, 0.5, 0.75, 0.95};
static const char *const jq_labels[JQ_BINS] = {"<= 0",       "0 - 0.25",    "0.25 - 0.5",
                                               "0.5 - 0.75", "0.75 - 0.95", ">= 0.95"};

typedef struct jq_summary {
    double worst;
    defo_index worst_elem;
    defo_index hist[JQ_BINS];
} jq_summary;

static defo_status jacobian_summary(const defo_mesh *mesh, jq_summary *jq) {
    memset(jq, 0, sizeof *jq);
    double *q = malloc(((size_t)mesh->num_elems + 1) * sizeof *q);
    if (!q) return DEFO_ERR_OUT_OF_MEMORY;
    defo_status s = defo_element_jacobian_quality(mesh, NULL, q, &jq->worst, &jq->worst_elem);
    for (defo_index e = 0; s >= 0 && e < mesh->num_elems; e++) {
        int b = 0;
        if (q[e] > 0) {
            b = 1;
            while (b < JQ_BINS - 1 && q[e] >= jq_edges[b]) b++;
        }
        jq->hist[b]++;
    }
    free(q);
    return s;
}

orient_counts cli_orientation_counts(const defo_mesh *m) {
    orient_counts c = {0, 0, -1, -1};
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = m->elems + (size_t)e * (size_t)m->nodes_per_elem;
        defo_vec3 p[4];
        for (int k = 0; k < 4; k++) p[k] = defo_v3_load(m->x + 3 * (size_t)v[k]);
        double l2 = 0;
        for (int a = 0; a < 4; a++)
            for (int b = a + 1; b < 4; b++) l2 = fmax(l2, defo_v3_norm2(defo_v3_sub(p[a], p[b])));
        double det = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                                 defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
        if (fabs(det) <= 1e-12 * l2 * sqrt(l2)) {
            if (c.flat++ == 0) c.first_flat = e;
        } else if (det < 0) {
            if (c.inverted++ == 0) c.first_inverted = e;
        }
    }
    return c;
}

int cli_report_mesh(const char *path, const defo_mesh *mesh, bool json) {
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    if (mesh->num_nodes > 0) {
        defo_status s = defo_mesh_bbox(mesh, lo, hi);
        if (s < 0) return cli_fail("info", s);
    }
    bool volumetric = mesh->num_elems > 0;
    orient_counts oc = cli_orientation_counts(mesh);
    double volume = 0;
    defo_quality_summary q;
    memset(&q, 0, sizeof q);
    q.worst_elem = -1;
    long long boundary_faces = 0, components = 0, open_edges = 0;
    double straight_volume = 0;
    jq_summary jq;
    memset(&jq, 0, sizeof jq);
    if (volumetric) {
        /* exact for curved tet10 elements; the corners' straight tetrahedra beside it */
        defo_status s = defo_element_volume(mesh, NULL, &volume);
        for (defo_index e = 0; s >= 0 && e < mesh->num_elems; e++) {
            const defo_index *v = mesh->elems + (size_t)e * (size_t)mesh->nodes_per_elem;
            defo_vec3 a = defo_v3_load(mesh->x + 3 * (size_t)v[0]);
            defo_vec3 b1 = defo_v3_sub(defo_v3_load(mesh->x + 3 * (size_t)v[1]), a);
            defo_vec3 b2 = defo_v3_sub(defo_v3_load(mesh->x + 3 * (size_t)v[2]), a);
            defo_vec3 b3 = defo_v3_sub(defo_v3_load(mesh->x + 3 * (size_t)v[3]), a);
            straight_volume += defo_v3_dot(b1, defo_v3_cross(b2, b3)) / 6.0;
        }
        if (s >= 0) s = jacobian_summary(mesh, &jq);
        if (s >= 0) s = defo_mesh_quality_summary(mesh, NULL, &q);
        defo_boundary b;
        if (s >= 0) s = defo_mesh_boundary(mesh, 0, &b);
        if (s < 0) return cli_fail("info", s);
        boundary_faces = b.num_faces;
        defo_boundary_free(&b);
        defo_index nc = 0;
        s = defo_mesh_components(mesh, NULL, &nc);
        if (s < 0) return cli_fail("info", s);
        components = nc;
    } else if (mesh->num_tris > 0) {
        surface_stats st;
        if (surface_statistics(mesh, &st) != 0) {
            fprintf(stderr, "defo info: out of memory\n");
            return CLI_INTERNAL;
        }
        volume = st.volume;
        boundary_faces = mesh->num_tris;
        components = st.components;
        open_edges = st.open_edges;
    }

    if (json) {
        cli_json j = {stdout, 0, {false}};
        cli_json_begin_object(&j, NULL);
        cli_json_string(&j, "file", path);
        cli_json_int(&j, "nodes", mesh->num_nodes);
        cli_json_int(&j, "elements", mesh->num_elems);
        cli_json_int(&j, "order", mesh->order);
        cli_json_int(&j, "triangles", mesh->num_tris);
        cli_json_number(&j, "volume", volume);
        cli_json_begin_array(&j, "bbox_min");
        for (int i = 0; i < 3; i++) cli_json_number(&j, NULL, lo[i]);
        cli_json_end_array(&j);
        cli_json_begin_array(&j, "bbox_max");
        for (int i = 0; i < 3; i++) cli_json_number(&j, NULL, hi[i]);
        cli_json_end_array(&j);
        cli_json_int(&j, "inverted", oc.inverted);
        cli_json_int(&j, "flat", oc.flat);
        cli_json_int(&j, "first_inverted", oc.first_inverted);
        cli_json_int(&j, "first_flat", oc.first_flat);
        if (volumetric) {
            cli_json_number(&j, "min_dihedral_deg", q.min_dihedral);
            cli_json_number(&j, "max_dihedral_deg", q.max_dihedral);
            cli_json_number(&j, "worst_aspect_ratio", q.worst_aspect);
            cli_json_number(&j, "mean_aspect_ratio", q.mean_aspect);
            cli_json_begin_array(&j, "min_dihedral_histogram_10deg");
            for (int b = 0; b < DEFO_QUALITY_BINS; b++)
                cli_json_int(&j, NULL, q.min_dihedral_hist[b]);
            cli_json_end_array(&j);
            cli_json_number(&j, "straight_volume", straight_volume);
            cli_json_begin_object(&j, "jacobian_quality");
            cli_json_number(&j, "worst", jq.worst);
            cli_json_int(&j, "worst_element", jq.worst_elem);
            cli_json_begin_array(&j, "bin_edges");
            for (int b = 0; b < JQ_BINS - 1; b++) cli_json_number(&j, NULL, jq_edges[b]);
            cli_json_end_array(&j);
            cli_json_begin_array(&j, "histogram");
            for (int b = 0; b < JQ_BINS; b++) cli_json_int(&j, NULL, jq.hist[b]);
            cli_json_end_array(&j);
            cli_json_end_object(&j);
        } else {
            cli_json_null(&j, "min_dihedral_deg");
            cli_json_null(&j, "max_dihedral_deg");
            cli_json_int(&j, "open_edges", open_edges);
        }
        cli_json_int(&j, "boundary_faces", boundary_faces);
        cli_json_int(&j, "components", components);
        cli_json_begin_array(&j, "groups");
        for (int g = 0; g < mesh->num_groups; g++) {
            cli_json_begin_object(&j, NULL);
            cli_json_int(&j, "dim", mesh->groups[g].dim);
            cli_json_int(&j, "tag", mesh->groups[g].tag);
            cli_json_string(&j, "name", mesh->groups[g].name);
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_begin_array(&j, "fields");
        for (int f = 0; f < mesh->num_fields; f++) {
            cli_json_begin_object(&j, NULL);
            cli_json_string(&j, "name", mesh->fields[f].name);
            cli_json_string(&j, "location",
                            mesh->fields[f].location == DEFO_FIELD_POINT ? "point" : "cell");
            cli_json_int(&j, "components", mesh->fields[f].components);
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_end_object(&j);
        return CLI_OK;
    }

    printf("%s\n", path);
    if (volumetric) {
        printf("  %lld node%s, %lld %s element%s, %lld boundary face%s, %lld component%s\n",
               (long long)mesh->num_nodes, cli_s(mesh->num_nodes), (long long)mesh->num_elems,
               mesh->order == 2 ? "tet10" : "tet4", cli_s(mesh->num_elems), boundary_faces,
               cli_s(boundary_faces), components, cli_s(components));
    } else {
        printf("  surface: %lld nodes, %lld triangles, %lld component%s, %s\n",
               (long long)mesh->num_nodes, (long long)mesh->num_tris, components,
               components == 1 ? "" : "s",
               open_edges ? "OPEN (edges not shared by exactly two triangles)" : "closed");
        if (open_edges)
            printf("  %lld edges are not shared by exactly two triangles\n", open_edges);
    }
    if (mesh->order == 2)
        printf("  volume %.6g m^3 (curved elements, exact; straight-sided %.6g m^3)\n", volume,
               straight_volume);
    else
        printf("  volume %.6g m^3%s\n", volume, volumetric ? "" : " (enclosed by the surface)");
    printf("  bounding box [%.6g, %.6g, %.6g] .. [%.6g, %.6g, %.6g] (size %.6g x %.6g x %.6g)\n",
           lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
    if (volumetric) {
        if (oc.inverted)
            printf("  inverted: %lld element%s negatively oriented as stored (first: element "
                   "%lld; a simulation frame, or a rest mesh defo reorients when it loads it)\n",
                   (long long)oc.inverted, cli_s(oc.inverted), (long long)oc.first_inverted);
        else
            printf("  inverted: 0\n");
        if (oc.flat)
            printf("  flat: %lld element%s with zero volume (first: element %lld; a rest mesh with "
                   "them cannot be simulated)\n",
                   (long long)oc.flat, cli_s(oc.flat), (long long)oc.first_flat);
        printf("  dihedral angles: min %.2f deg (element %lld), max %.2f deg\n", q.min_dihedral,
               (long long)q.worst_elem, q.max_dihedral);
        printf("  aspect ratio: mean %.3f, worst %.3f (1 = regular tetrahedron)\n", q.mean_aspect,
               q.worst_aspect);
        printf("  min dihedral angle per element:\n");
        defo_index peak = 1;
        for (int b = 0; b < DEFO_QUALITY_BINS; b++)
            if (q.min_dihedral_hist[b] > peak) peak = q.min_dihedral_hist[b];
        for (int b = 0; b < 8; b++) {
            int bar = (int)(40.0 * q.min_dihedral_hist[b] / peak + 0.5);
            printf("    %3d-%3d deg %9lld |", 10 * b, 10 * b + 10,
                   (long long)q.min_dihedral_hist[b]);
            for (int i = 0; i < bar; i++) putchar('#');
            putchar('\n');
        }
        if (mesh->order == 2) {
            printf("  Jacobian quality (min det J / straight det J; <= 0: the element folds): "
                   "worst %.4g (element %lld)\n",
                   jq.worst, (long long)jq.worst_elem);
            defo_index jpeak = 1;
            for (int b = 0; b < JQ_BINS; b++)
                if (jq.hist[b] > jpeak) jpeak = jq.hist[b];
            for (int b = 0; b < JQ_BINS; b++) {
                int bar = (int)(40.0 * jq.hist[b] / jpeak + 0.5);
                printf("    %-12s %9lld |", jq_labels[b], (long long)jq.hist[b]);
                for (int i = 0; i < bar; i++) putchar('#');
                putchar('\n');
            }
        }
    }
    for (int g = 0; g < mesh->num_groups; g++)
        printf("  group %d (dim %d): %s\n", mesh->groups[g].tag, mesh->groups[g].dim,
               mesh->groups[g].name[0] ? mesh->groups[g].name : "(unnamed)");
    for (int f = 0; f < mesh->num_fields; f++)
        printf("  %s field '%s' (%d component%s)\n",
               mesh->fields[f].location == DEFO_FIELD_POINT ? "point" : "cell",
               mesh->fields[f].name, mesh->fields[f].components,
               mesh->fields[f].components == 1 ? "" : "s");
    return CLI_OK;
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("info", "unknown option '%s'", argv[i]);
        else if (!path)
            path = argv[i];
        else
            return cli_usage_error("info", "unexpected argument '%s'", argv[i]);
    }
    if (!path) return cli_usage_error("info", "missing MESH argument");

    /* Read as stored: inverted and flat elements are reported, not repaired */
    defo_read_options ro = defo_default_read_options();
    ro.reorient = DEFO_ORIENT_KEEP;
    defo_mesh *mesh = NULL;
    defo_status s = defo_mesh_read(path, &ro, &mesh);
    if (s < 0) return cli_fail("info", s);
    if (s > 0) fprintf(stderr, "defo info: warning: %s\n", defo_last_error());
    int rc = cli_report_mesh(path, mesh, json);
    defo_mesh_destroy(mesh);
    return rc;
}
