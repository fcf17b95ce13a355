/* Limit-file grammar (limits_abi.h, item 1): "key value" lines, '#' comments, blank lines.
 * Known keys: version (required, must be 1), container, region (required, absolute path),
 * device <uuid> <bytes> (at most GPUFRAC_MAX_DEVICES, no duplicates), then optionally
 * compute <uuid> <weight ppm> <fair|strict> <normal|high> for a device listed before it, and
 * arbiter <uuid> <token> after that (the slot of the GPU's compute arbiter), burst <uuid> <request bytes>
 * (below the device's limit) and wait <uuid> <ms> (1 to 3600000). Unknown keys are ignored so
 * a later host can add informational keys without a version bump. No allocation. */
#include <stdio.h>
#include <string.h>

#include "gf_config.h"

struct span {
  const char* p;
  size_t n;
};

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

static struct span trim(struct span s) {
  while (s.n > 0 && is_blank(s.p[0])) s.p++, s.n--;
  while (s.n > 0 && is_blank(s.p[s.n - 1])) s.n--;
  return s;
}

/* Splits s at its first blank: returns the head, leaves the trimmed rest in *rest. */
static struct span split(struct span s, struct span* rest) {
  size_t i = 0;
  while (i < s.n && !is_blank(s.p[i])) i++;
  struct span head = {s.p, i};
  *rest = trim((struct span){s.p + i, s.n - i});
  return head;
}

static int eq(struct span s, const char* word) {
  return s.n == strlen(word) && memcmp(s.p, word, s.n) == 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int gf_uuid_parse(const char* t, size_t n, uint8_t out[16]) {
  static const int kGroupDigits[5] = {8, 4, 4, 4, 12};
  if (n != 40 || (memcmp(t, "GPU-", 4) != 0 && memcmp(t, "MIG-", 4) != 0)) return -1;
  size_t pos = 4;
  int k = 0;
  for (int g = 0; g < 5; g++) {
    if (g > 0 && t[pos++] != '-') return -1;
    for (int i = 0; i < kGroupDigits[g] / 2; i++, pos += 2) {
      int hi = hexval(t[pos]), lo = hexval(t[pos + 1]);
      if (hi < 0 || lo < 0) return -1;
      out[k++] = (uint8_t)(hi << 4 | lo);
    }
  }
  return 0;
}

void gf_uuid_format(const uint8_t b[16], const char* prefix, char* out, size_t out_len) {
  snprintf(out, out_len, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix, b[0], b[1],
           b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int gf_config_find(const struct gf_config* cfg, const uint8_t bytes[16]) {
  for (unsigned i = 0; i < cfg->device_count; i++) {
    if (memcmp(cfg->devices[i].bytes, bytes, 16) == 0) return (int)i;
  }
  return -1;
}

static int parse_u64(struct span s, uint64_t* out) {
  if (s.n == 0 || s.n > 20) return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < s.n; i++) {
    if (s.p[i] < '0' || s.p[i] > '9') return -1;
    unsigned d = (unsigned)(s.p[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int printable(struct span s, int allow_space) {
  for (size_t i = 0; i < s.n; i++) {
    unsigned char c = (unsigned char)s.p[i];
    if (c < 0x20 || c == 0x7f || (c == ' ' && !allow_space) || c == '\t') return 0;
  }
  return 1;
}

static const char* parse_device(struct gf_config* cfg, struct span value) {
  struct span rest;
  struct span uuid = split(value, &rest);
  struct gf_device_limit* d = &cfg->devices[cfg->device_count];
  if (cfg->device_count == GPUFRAC_MAX_DEVICES) return "device: more than 16 device lines";
  if (gf_uuid_parse(uuid.p, uuid.n, d->bytes) != 0) {
    return "device: bad UUID; accepted: GPU-<8-4-4-4-12 hex digits> or MIG-<8-4-4-4-12 hex digits>";
  }
  if (parse_u64(rest, &d->limit) != 0) return "device: bad limit; accepted: a decimal byte count";
  if (gf_config_find(cfg, d->bytes) >= 0) return "device: UUID listed twice";
  memcpy(d->uuid, uuid.p, uuid.n);
  d->uuid[uuid.n] = '\0';
  cfg->device_count++;
  return NULL;
}

static int word_choice(struct span s, const char* zero, const char* one, uint8_t* out) {
  if (eq(s, zero)) return *out = 0, 0;
  if (eq(s, one)) return *out = 1, 0;
  return -1;
}

/* "compute <uuid> <weight ppm> <fair|strict> <normal|high>", after the uuid's device line. */
static const char* parse_compute(struct gf_config* cfg, struct span value) {
  struct span rest, uuid = split(value, &rest);
  uint8_t bytes[16];
  if (gf_uuid_parse(uuid.p, uuid.n, bytes) != 0) return "compute: bad UUID; accepted: the UUID of a device line";
  int i = gf_config_find(cfg, bytes);
  if (i < 0) return "compute: no device line for this UUID before it; accepted: device <uuid> <bytes> first";
  struct gf_device_limit* d = &cfg->devices[i];
  if (d->compute_ppm != 0) return "compute: UUID listed twice";
  struct span weight = split(rest, &rest), mode = split(rest, &rest), prio = split(rest, &rest);
  uint64_t w = 0;
  if (parse_u64(weight, &w) != 0 || w == 0 || w > 1000000) {
    return "compute: bad weight; accepted: parts per million of the GPU, 1 to 1000000";
  }
  if (word_choice(mode, "fair", "strict", &d->compute_strict) != 0)
    return "compute: bad mode; accepted: fair or strict";
  if (word_choice(prio, "normal", "high", &d->priority_high) != 0 || rest.n != 0) {
    return "compute: bad priority; accepted: normal or high, last on the line";
  }
  d->compute_ppm = (uint32_t)w;
  return NULL;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* "arbiter <uuid> <token: 16 hex digits, not all zero>", after the uuid's compute line. */
static const char* parse_arbiter(struct gf_config* cfg, struct span value) {
  struct span rest, uuid = split(value, &rest);
  uint8_t bytes[16];
  int i = gf_uuid_parse(uuid.p, uuid.n, bytes) == 0 ? gf_config_find(cfg, bytes) : -1;
  if (i < 0 || cfg->devices[i].compute_ppm == 0) {
    return "arbiter: no compute line for this UUID before it; accepted: compute <uuid> ... first";
  }
  if (cfg->devices[i].compute_token != 0) return "arbiter: UUID listed twice";
  struct span token = split(rest, &rest);
  uint64_t t = 0;
  for (size_t k = 0; k < token.n && token.n == 16; k++) {
    int d = hex_digit(token.p[k]);
    if (d < 0) break;
    t = t << 4 | (uint64_t)d;
    if (k == 15 && t != 0 && rest.n == 0) return cfg->devices[i].compute_token = t, NULL;
  }
  return "arbiter: bad token; accepted: 16 hex digits, not all zero, last on the line";
}

/* The device line of "<uuid> ..." listed before it: its index, or -1. */
static int device_of(const struct gf_config* cfg, struct span uuid) {
  uint8_t bytes[16];
  return gf_uuid_parse(uuid.p, uuid.n, bytes) == 0 ? gf_config_find(cfg, bytes) : -1;
}

/* "burst <uuid> <request bytes>": below the device's limit, once. */
static const char* parse_burst(struct gf_config* cfg, struct span value) {
  struct span rest, uuid = split(value, &rest);
  int i = device_of(cfg, uuid);
  if (i < 0) return "burst: no device line for this UUID before it; accepted: device <uuid> <bytes> first";
  if (cfg->devices[i].request != 0) return "burst: UUID listed twice";
  uint64_t request = 0;
  if (parse_u64(rest, &request) != 0 || request == 0 || request >= cfg->devices[i].limit) {
    return "burst: bad request; accepted: a decimal byte count above 0 and below the device's limit";
  }
  cfg->devices[i].request = request;
  return NULL;
}

/* "wait <uuid> <milliseconds>": 1 to 3600000, once. */
static const char* parse_wait(struct gf_config* cfg, struct span value) {
  struct span rest, uuid = split(value, &rest);
  int i = device_of(cfg, uuid);
  if (i < 0) return "wait: no device line for this UUID before it; accepted: device <uuid> <bytes> first";
  if (cfg->devices[i].wait_ms != 0) return "wait: UUID listed twice";
  uint64_t ms = 0;
  if (parse_u64(rest, &ms) != 0 || ms == 0 || ms > 3600000) return "wait: bad timeout; accepted: 1 to 3600000 ms";
  cfg->devices[i].wait_ms = (uint32_t)ms;
  return NULL;
}

/* Applies one "key value" line. Returns NULL or the reason it is refused. */
static const char* parse_line(struct gf_config* cfg, struct span key, struct span value, unsigned* seen) {
  if (eq(key, "version")) {
    uint64_t v = 0;
    if (*seen & 1) return "version: given twice";
    if (parse_u64(value, &v) != 0 || v != GPUFRAC_LIMITS_VERSION) return "version: unsupported; accepted: 1";
    cfg->version = (unsigned)v;
    *seen |= 1;
  } else if (eq(key, "container")) {
    if (*seen & 2) return "container: given twice";
    if (value.n == 0 || value.n >= GF_CONTAINER_MAX || !printable(value, 0)) {
      return "container: bad id; accepted: 1 to 255 printable characters without spaces";
    }
    memcpy(cfg->container, value.p, value.n);
    *seen |= 2;
  } else if (eq(key, "region")) {
    if (*seen & 4) return "region: given twice";
    if (value.n == 0 || value.n >= GF_PATH_MAX || value.p[0] != '/' || !printable(value, 1)) {
      return "region: bad path; accepted: an absolute path";
    }
    memcpy(cfg->region, value.p, value.n);
    *seen |= 4;
  } else if (eq(key, "device")) {
    return parse_device(cfg, value);
  } else if (eq(key, "compute")) {
    return parse_compute(cfg, value);
  } else if (eq(key, "arbiter")) {
    return parse_arbiter(cfg, value);
  } else if (eq(key, "burst")) {
    return parse_burst(cfg, value);
  } else if (eq(key, "wait")) {
    return parse_wait(cfg, value);
  }
  return NULL; /* unknown keys are informational */
}

int gf_config_parse(const char* text, size_t len, struct gf_config* out, char* err, size_t err_len) {
  memset(out, 0, sizeof *out);
  unsigned seen = 0, lineno = 0;
  for (size_t pos = 0; pos < len;) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    struct span line = trim((struct span){text + pos, end - pos});
    pos = end + 1;
    lineno++;
    if (line.n == 0 || line.p[0] == '#') continue;
    if (memchr(line.p, '\0', line.n) != NULL) {
      snprintf(err, err_len, "line %u: NUL byte; accepted: text lines \"key value\"", lineno);
      return -1;
    }
    struct span value;
    struct span key = split(line, &value);
    const char* why = parse_line(out, key, value, &seen);
    if (why != NULL) {
      snprintf(err, err_len, "line %u: %s", lineno, why);
      return -1;
    }
  }
  if (!(seen & 1)) return snprintf(err, err_len, "missing line \"version 1\""), -1;
  if (!(seen & 4)) return snprintf(err, err_len, "missing line \"region <absolute path>\""), -1;
  return 0;
}
