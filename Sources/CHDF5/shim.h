// Swift cannot import HDF5's constant macros, and reading the library's mutable `*_g` globals
// is a Swift 6 concurrency error, so each constant gets a `static inline` accessor here.
#ifndef CHDF5_SHIM_H
#define CHDF5_SHIM_H

#include <hdf5.h>
#include <hdf5_hl.h>

// Native (in-memory) atomic types.
static inline hid_t chdf5_H5T_NATIVE_FLOAT(void) { return H5T_NATIVE_FLOAT; }
static inline hid_t chdf5_H5T_NATIVE_DOUBLE(void) { return H5T_NATIVE_DOUBLE; }
static inline hid_t chdf5_H5T_NATIVE_INT8(void) { return H5T_NATIVE_INT8; }
static inline hid_t chdf5_H5T_NATIVE_UINT8(void) { return H5T_NATIVE_UINT8; }
static inline hid_t chdf5_H5T_NATIVE_INT16(void) { return H5T_NATIVE_INT16; }
static inline hid_t chdf5_H5T_NATIVE_UINT16(void) { return H5T_NATIVE_UINT16; }
static inline hid_t chdf5_H5T_NATIVE_INT32(void) { return H5T_NATIVE_INT32; }
static inline hid_t chdf5_H5T_NATIVE_UINT32(void) { return H5T_NATIVE_UINT32; }
static inline hid_t chdf5_H5T_NATIVE_INT64(void) { return H5T_NATIVE_INT64; }
static inline hid_t chdf5_H5T_NATIVE_UINT64(void) { return H5T_NATIVE_UINT64; }
static inline hid_t chdf5_H5T_C_S1(void) { return H5T_C_S1; }
static inline size_t chdf5_H5T_VARIABLE(void) { return H5T_VARIABLE; }

// File access flags.
static inline unsigned chdf5_H5F_ACC_TRUNC(void) { return H5F_ACC_TRUNC; }
static inline unsigned chdf5_H5F_ACC_RDONLY(void) { return H5F_ACC_RDONLY; }
static inline unsigned chdf5_H5F_ACC_RDWR(void) { return H5F_ACC_RDWR; }

// Property-list classes and defaults.
static inline hid_t chdf5_H5P_DEFAULT(void) { return H5P_DEFAULT; }
static inline hid_t chdf5_H5P_FILE_ACCESS(void) { return H5P_FILE_ACCESS; }
static inline hid_t chdf5_H5P_DATASET_CREATE(void) { return H5P_DATASET_CREATE; }
static inline hid_t chdf5_H5P_LINK_CREATE(void) { return H5P_LINK_CREATE; }

// Dataspaces and error stacks.
static inline hid_t chdf5_H5S_ALL(void) { return H5S_ALL; }
static inline hsize_t chdf5_H5S_UNLIMITED(void) { return H5S_UNLIMITED; }
static inline hid_t chdf5_H5E_DEFAULT(void) { return H5E_DEFAULT; }

// HDF5 keeps the automatic error printer per thread (the Debian build is thread-safe), so it
// must be switched off on every thread that calls the library; the flag makes repeats cheap.
//
// It also asks the library not to run its own clean-up at process exit (H5dont_atexit, which must
// come before the first HDF5 call): after a failed write (disk full, quota, I/O error) libhdf5 1.10
// keeps a half-closed dataset in its identifier table and its exit handler dereferences it
// (SIGSEGV in H5D_close from H5_term_library). Every file is closed explicitly by its owner, so
// nothing is lost; the operating system reclaims the rest.
//
// And it caps libhdf5's free lists (H5set_free_list_limits; unlimited by default): the library
// keeps every block it frees for reuse, so rebuilding /summary from a file of 110 runs held
// 19 MB of freed blocks at its peak (heaptrack, `continual run Experiments/replay.json`), a cost
// that grew with the number of runs and that no memory estimate could follow. Capped at 1 MiB per
// kind of list (256 kB per list), freed blocks beyond go back to malloc.
static inline void chdf5_silence_errors(void) {
    static int prepared = 0;
    if (!prepared) {
        H5dont_atexit();
        H5set_free_list_limits(1 << 20, 1 << 18, 1 << 20, 1 << 18, 1 << 20, 1 << 18);
        prepared = 1;
    }
    static _Thread_local int silenced = 0;
    if (!silenced) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        silenced = 1;
    }
}

// Caps a file's metadata cache (object headers, B-tree nodes) at `max_bytes`. The default
// adaptive cache grows to 32 MB, and a sweep writer that reads many run groups of one file would
// fill it. (The larger part of the writer's growth with its number of runs was elsewhere:
// H5Ocopy's per-copy memory, freed only at file close; see SweepWriter.absorbBatch.) Files here
// are read and written in small pieces; the cache's hit rate matters little against the
// operating system's page cache.
static inline herr_t chdf5_limit_metadata_cache(hid_t access, size_t max_bytes) {
    H5AC_cache_config_t config;
    config.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (H5Pget_mdc_config(access, &config) < 0) return -1;
    if (config.max_size > max_bytes) config.max_size = max_bytes;
    if (config.min_size > config.max_size) config.min_size = config.max_size;
    if (config.initial_size > config.max_size) config.initial_size = config.max_size;
    config.set_initial_size = 1;
    return H5Pset_mdc_config(access, &config);
}

#endif
