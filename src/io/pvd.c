/*
 * io/pvd.c — ParaView collection files (.pvd): an XML index of (time, file)
 * pairs so ParaView opens a whole simulation as one time series.
 *
 * <VTKFile type="Collection"><Collection><DataSet timestep="t" group=""
 * part="0" file="..."/>...</Collection></VTKFile>.  File names under the
 * .pvd's folder are written relative to it, so the output folder can be
 * moved.  Times are written exactly (shortest round-trip decimal).  The file
 * is written atomically (defo_out).
 */
#include "io/ioutil.h"

#include <math.h>
#include <string.h>

/* Length of the folder part of path including the final '/', or 0. */
static size_t dir_len(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? (size_t)(slash - path + 1) : 0;
}

defo_status defo_pvd_write(const char *path, const double *times, const char *const *files,
                           int count) {
    if (!path || count < 0 || (count > 0 && (!times || !files)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_pvd_write: bad arguments");
    for (int i = 0; i < count; i++) {
        if (!files[i] || !files[i][0])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_pvd_write: entry %d has no file", i);
        if (!isfinite(times[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_pvd_write: entry %d has a non-finite time", i);
    }
    defo_out o;
    defo_status s = defo_out_open(&o, path);
    if (s < 0) return s;
    defo_out_printf(&o,
                    "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n"
                    "  <Collection>\n");
    size_t dl = dir_len(path);
    for (int i = 0; i < count; i++) {
        const char *f = files[i];
        /* relative to the .pvd's folder when the file lies under it */
        if (dl > 0 && strncmp(f, path, dl) == 0 && f[dl])
            f += dl;
        else if (dl == 0 && strncmp(f, "./", 2) == 0 && f[2])
            f += 2;
        defo_out_printf(&o, "    <DataSet timestep=\"");
        defo_out_double(&o, times[i]);
        defo_out_printf(&o, "\" group=\"\" part=\"0\" file=\"");
        for (; *f; f++) {
            switch (*f) {
            case '&':
                defo_out_write(&o, "&amp;", 5);
                break;
            case '<':
                defo_out_write(&o, "&lt;", 4);
                break;
            case '>':
                defo_out_write(&o, "&gt;", 4);
                break;
            case '"':
                defo_out_write(&o, "&quot;", 6);
                break;
            default:
                defo_out_write(&o, f, 1);
            }
        }
        defo_out_printf(&o, "\"/>\n");
    }
    defo_out_printf(&o, "  </Collection>\n</VTKFile>\n");
    return defo_out_commit(&o);
}
