/* The configurations usage_model explores, and the mutants' names. Each configuration is small
 * enough to explore exhaustively in seconds and shaped so that a cache is filled, then made stale
 * by another process's change, a death or a reclaim, before it is used. */
#include <string.h>

#include "usage_model.h"

const struct config model_configs[] = {
    {"two processes, one kill",
     2,
     10,
     1,
     {{{'A', 5}, {'R', 0}, {'A', 4}, {'F', 0}, {'R', 0}, {'F', 0}}, {{'A', 6}, {'R', 0}, {'F', 0}, {'A', 5}}}},
    {"two processes, two kills",
     2,
     8,
     2,
     {{{'A', 3}, {'A', 3}, {'R', 0}, {'F', 0}, {'C', 0}}, {{'A', 5}, {'C', 0}, {'R', 0}, {'F', 0}}}},
    {"three processes, reclaim", 3, 8, 1, {{{'A', 4}, {'F', 0}}, {{'A', 4}, {'R', 0}}, {{'A', 3}, {'C', 0}}}},
    {0, 0, 0, 0, {{{0, 0}}}},
};

static const char* const names[M_COUNT] = {
    "none",          "no-count-reserve", "no-count-release", "no-count-reclaim", "count-before-add", "cache-unchecked",
    "hw-before-add",
};

const char* mutant_name(enum mutant m) {
  return names[m];
}

int mutant_parse(const char* name, enum mutant* m) {
  for (int i = 0; i < M_COUNT; i++) {
    if (strcmp(name, names[i]) == 0) {
      *m = (enum mutant)i;
      return 1;
    }
  }
  return 0;
}
