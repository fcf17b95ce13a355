/* A CUDA driver from before the checkpoint API (r570): cuInit and nothing of cuCheckpointProcess*,
 * for cuda_checkpoint_test's refusal of an old driver. */
__attribute__((visibility("default"))) int cuInit(unsigned flags) {
  return flags == 0 ? 0 : 1;
}
