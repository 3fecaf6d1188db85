/*
 * glibc's allocator settings for a broker process, as a Node-API addon: Node Buffers above V8's
 * pooled sizes are malloc'd, and by default glibc raises its mmap threshold after a large free (up to
 * 32 MiB), so later 64 KiB-10 MiB buffers come from its arenas, where freed memory often stays
 * resident. `weir start` fixes the threshold (src/server/malloc-tuning.ts; docs/performance.md).
 *
 *   mallopt(param, value) -> glibc's mallopt(): 1 on success, 0 if glibc refused the value
 *   mallocTrim(pad) -> glibc's malloc_trim(pad): 1 if memory was returned to the system, else 0
 *   mallinfo() -> [arena, hblkhd, uordblks, fordblks, keepcost]: glibc's mallinfo2(), in bytes (bytes
 *     of the main arena from sbrk, of mmapped chunks, in use, free in arenas, trimmable at the top)
 *
 * Exports nothing where the C library is not glibc (no gnu_get_libc_version) or lacks one of these
 * (mallinfo2 came in glibc 2.33: mallinfo alone is then missing): every symbol is looked up with
 * dlsym at load, so the addon loads on any C library and the caller falls back to doing nothing.
 * Built by tools/build-native.js into build/native/malloc-tuning.node (Linux); self-contained: the
 * few Node-API declarations it needs are below, so no headers are needed to build it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* napi_ok == 0 */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
extern napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
extern napi_status napi_get_value_int32(napi_env, napi_value, int32_t *);
extern napi_status napi_get_value_double(napi_env, napi_value, double *);
extern napi_status napi_create_int32(napi_env, int32_t, napi_value *);
extern napi_status napi_create_double(napi_env, double, napi_value *);
extern napi_status napi_create_array_with_length(napi_env, size_t, napi_value *);
extern napi_status napi_set_element(napi_env, napi_value, uint32_t, napi_value);
extern napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
extern napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
extern napi_status napi_throw_type_error(napi_env, const char *, const char *);

/* glibc's struct mallinfo2 (malloc.h, 2.33+): ten size_t fields. */
struct weir_mallinfo2 {
  size_t arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks, fordblks, keepcost;
};

static int (*p_mallopt)(int, int);
static int (*p_malloc_trim)(size_t);
static struct weir_mallinfo2 (*p_mallinfo2)(void);

static napi_value Mallopt(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t param, value;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 2 ||
      napi_get_value_int32(env, argv[0], &param) != 0 || napi_get_value_int32(env, argv[1], &value) != 0) {
    napi_throw_type_error(env, NULL, "mallopt(param, value): two int32");
    return NULL;
  }
  napi_value result;
  napi_create_int32(env, p_mallopt(param, value), &result);
  return result;
}

static napi_value MallocTrim(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  double pad;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 1 ||
      napi_get_value_double(env, argv[0], &pad) != 0 || !(pad >= 0)) {
    napi_throw_type_error(env, NULL, "mallocTrim(pad): a number >= 0");
    return NULL;
  }
  napi_value result;
  napi_create_int32(env, p_malloc_trim((size_t)pad), &result);
  return result;
}

static napi_value Mallinfo(napi_env env, napi_callback_info info) {
  (void)info;
  struct weir_mallinfo2 m = p_mallinfo2();
  double fields[5] = {(double)m.arena, (double)m.hblkhd, (double)m.uordblks, (double)m.fordblks, (double)m.keepcost};
  napi_value array, n;
  napi_create_array_with_length(env, 5, &array);
  for (uint32_t i = 0; i < 5; i++) {
    napi_create_double(env, fields[i], &n);
    napi_set_element(env, array, i, n);
  }
  return array;
}

static void export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  if (napi_create_function(env, name, (size_t)-1, cb, NULL, &fn) == 0) napi_set_named_property(env, exports, name, fn);
}

__attribute__((visibility("default"))) int32_t node_api_module_get_api_version_v1(void) { return 8; }

__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  if (dlsym(RTLD_DEFAULT, "gnu_get_libc_version") == NULL) return exports;
  *(void **)&p_mallopt = dlsym(RTLD_DEFAULT, "mallopt");
  *(void **)&p_malloc_trim = dlsym(RTLD_DEFAULT, "malloc_trim");
  *(void **)&p_mallinfo2 = dlsym(RTLD_DEFAULT, "mallinfo2");
  if (p_mallopt == NULL || p_malloc_trim == NULL) return exports;
  export_function(env, exports, "mallopt", Mallopt);
  export_function(env, exports, "mallocTrim", MallocTrim);
  if (p_mallinfo2 != NULL) export_function(env, exports, "mallinfo", Mallinfo);
  return exports;
}
