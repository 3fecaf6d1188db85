/*
 * CRC-32C (Castagnoli) for record batches, as a Node-API addon: the SSE4.2 crc32 instruction on
 * three interleaved streams (three independent dependency chains, combined with shift tables, as in
 * Mark Adler's crc32c.c), called with a range of a buffer so that no view is made per batch.
 *
 *   crc32c(buffer, crc, start, end) -> CRC-32C of buffer[start, end), continuing from crc (0 to start)
 *   crc32cBatches(buffer, start, end) -> where a run of record batches (v2 framing) with right CRCs,
 *     from start, stops: end when every batch up to it is whole and its CRC matches, else the
 *     position of the first batch that is cut short by `end` or whose CRC does not match. One call
 *     for all the batches of an append (a follower's fetch), instead of one per batch.
 *
 * Built by tools/build-native.js into build/native/crc32c.node (x86-64 Linux with a C compiler);
 * src/protocol/records/crc32c.ts loads it, checks it against the pure-TS table, and falls back to
 * @node-rs/crc32, then to the table, when it is absent or wrong. Self-contained: the few Node-API
 * declarations it needs are below (a stable C ABI, resolved from the node binary at load), so no
 * headers are needed to build it.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct napi_env__ *napi_env;
typedef struct napi_value__ *napi_value;
typedef struct napi_callback_info__ *napi_callback_info;
typedef int napi_status; /* napi_ok == 0 */
typedef napi_value (*napi_callback)(napi_env env, napi_callback_info info);
extern napi_status napi_get_cb_info(napi_env, napi_callback_info, size_t *, napi_value *, napi_value *, void **);
extern napi_status napi_get_buffer_info(napi_env, napi_value, void **, size_t *);
extern napi_status napi_get_value_uint32(napi_env, napi_value, uint32_t *);
extern napi_status napi_create_uint32(napi_env, uint32_t, napi_value *);
extern napi_status napi_create_function(napi_env, const char *, size_t, napi_callback, void *, napi_value *);
extern napi_status napi_set_named_property(napi_env, napi_value, const char *, napi_value);
extern napi_status napi_throw_type_error(napi_env, const char *, const char *);
extern napi_status napi_throw_range_error(napi_env, const char *, const char *);

#define POLY 0x82f63b78u /* reflected */
#define LONG 8192
#define SHORT 256

/* a * b modulo the polynomial (reflected: bit 31 is x^0); a must not be 0. */
static uint32_t multmodp(uint32_t a, uint32_t b) {
  uint32_t m = (uint32_t)1 << 31, p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
  }
  return p;
}

/* x^(8 * bytes) modulo the polynomial: the operator that appends `bytes` zero bytes to a register. */
static uint32_t x8nmodp(size_t bytes) {
  uint32_t x2n[64];
  uint32_t p = (uint32_t)1 << 30; /* x^1 */
  x2n[0] = p;
  for (int k = 1; k < 64; k++) x2n[k] = p = multmodp(p, p); /* x^(2^k) */
  p = (uint32_t)1 << 31; /* x^0 */
  size_t n = bytes;
  for (int k = 3; n != 0; n >>= 1, k++)
    if (n & 1) p = multmodp(x2n[k], p);
  return p;
}

/* Byte-wise tables of a zeros operator: shift(t, r) = r * x^(8 * len) for the len the table was made for. */
static uint32_t shift_long[4][256], shift_short[4][256];

static void make_shift(uint32_t t[4][256], size_t len) {
  uint32_t op = x8nmodp(len);
  for (uint32_t n = 0; n < 256; n++)
    for (int k = 0; k < 4; k++) t[k][n] = multmodp(op, n << (8 * k));
}

static inline uint32_t shift(uint32_t t[4][256], uint32_t r) {
  return t[0][r & 0xff] ^ t[1][(r >> 8) & 0xff] ^ t[2][(r >> 16) & 0xff] ^ t[3][r >> 24];
}

static inline uint64_t load64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const unsigned char *next, size_t len) {
  uint64_t crc0 = crc ^ 0xffffffffu, crc1, crc2;
  while (len != 0 && ((uintptr_t)next & 7) != 0) {
    crc0 = __builtin_ia32_crc32qi((uint32_t)crc0, *next++);
    len--;
  }
  while (len >= 3 * LONG) {
    crc1 = crc2 = 0;
    const unsigned char *end = next + LONG;
    do {
      crc0 = __builtin_ia32_crc32di(crc0, load64(next));
      crc1 = __builtin_ia32_crc32di(crc1, load64(next + LONG));
      crc2 = __builtin_ia32_crc32di(crc2, load64(next + 2 * LONG));
      next += 8;
    } while (next < end);
    crc0 = shift(shift_long, (uint32_t)crc0) ^ (uint32_t)crc1;
    crc0 = shift(shift_long, (uint32_t)crc0) ^ (uint32_t)crc2;
    next += 2 * LONG;
    len -= 3 * LONG;
  }
  while (len >= 3 * SHORT) {
    crc1 = crc2 = 0;
    const unsigned char *end = next + SHORT;
    do {
      crc0 = __builtin_ia32_crc32di(crc0, load64(next));
      crc1 = __builtin_ia32_crc32di(crc1, load64(next + SHORT));
      crc2 = __builtin_ia32_crc32di(crc2, load64(next + 2 * SHORT));
      next += 8;
    } while (next < end);
    crc0 = shift(shift_short, (uint32_t)crc0) ^ (uint32_t)crc1;
    crc0 = shift(shift_short, (uint32_t)crc0) ^ (uint32_t)crc2;
    next += 2 * SHORT;
    len -= 3 * SHORT;
  }
  while (len >= 8) {
    crc0 = __builtin_ia32_crc32di(crc0, load64(next));
    next += 8;
    len -= 8;
  }
  while (len != 0) {
    crc0 = __builtin_ia32_crc32qi((uint32_t)crc0, *next++);
    len--;
  }
  return (uint32_t)crc0 ^ 0xffffffffu;
}

static napi_value Crc32c(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  void *data;
  size_t length;
  uint32_t crc, start, end;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 4 ||
      napi_get_buffer_info(env, argv[0], &data, &length) != 0 || napi_get_value_uint32(env, argv[1], &crc) != 0 ||
      napi_get_value_uint32(env, argv[2], &start) != 0 || napi_get_value_uint32(env, argv[3], &end) != 0) {
    napi_throw_type_error(env, NULL, "crc32c(buffer, crc, start, end): a Buffer and three uint32");
    return NULL;
  }
  if (start > end || end > length) {
    napi_throw_range_error(env, NULL, "crc32c: start <= end <= buffer.length");
    return NULL;
  }
  napi_value result;
  napi_create_uint32(env, crc32c_hw(crc, (const unsigned char *)data + start, end - start), &result);
  return result;
}

/* Record batch v2 framing (Kafka's DefaultRecordBatch): what crc32cBatches walks. */
#define LOG_OVERHEAD 12          /* baseOffset int64, batchLength int32 */
#define BATCH_HEADER_BYTES 61
#define BATCH_LENGTH_OFFSET 8
#define CRC_OFFSET 17            /* uint32, over attributes..end */
#define CRC_START 21

static uint32_t read_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static napi_value Crc32cBatches(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  void *data;
  size_t length;
  uint32_t start, end;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != 0 || argc < 3 ||
      napi_get_buffer_info(env, argv[0], &data, &length) != 0 || napi_get_value_uint32(env, argv[1], &start) != 0 ||
      napi_get_value_uint32(env, argv[2], &end) != 0) {
    napi_throw_type_error(env, NULL, "crc32cBatches(buffer, start, end): a Buffer and two uint32");
    return NULL;
  }
  if (start > end || end > length) {
    napi_throw_range_error(env, NULL, "crc32cBatches: start <= end <= buffer.length");
    return NULL;
  }
  const unsigned char *buf = data;
  size_t at = start;
  while (at < end) {
    if (end - at < BATCH_HEADER_BYTES) break;
    int32_t batch_length = (int32_t)read_be32(buf + at + BATCH_LENGTH_OFFSET);
    if (batch_length < BATCH_HEADER_BYTES - LOG_OVERHEAD) break;
    size_t size = LOG_OVERHEAD + (size_t)batch_length;
    if (size > end - at) break;
    if (crc32c_hw(0, buf + at + CRC_START, size - CRC_START) != read_be32(buf + at + CRC_OFFSET)) break;
    at += size;
  }
  napi_value result;
  napi_create_uint32(env, (uint32_t)at, &result);
  return result;
}

__attribute__((visibility("default"))) int32_t node_api_module_get_api_version_v1(void) { return 8; }

/* Exports nothing on a CPU without SSE4.2: the loader then falls back. */
__attribute__((visibility("default"))) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("sse4.2")) return exports;
  make_shift(shift_long, LONG);
  make_shift(shift_short, SHORT);
  napi_value fn;
  if (napi_create_function(env, "crc32c", (size_t)-1, Crc32c, NULL, &fn) == 0)
    napi_set_named_property(env, exports, "crc32c", fn);
  if (napi_create_function(env, "crc32cBatches", (size_t)-1, Crc32cBatches, NULL, &fn) == 0)
    napi_set_named_property(env, exports, "crc32cBatches", fn);
  return exports;
}
