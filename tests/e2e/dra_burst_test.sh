#!/bin/bash
# gpufrac-dra with a claim whose opaque configuration for gpufrac.io carries a memoryLimit above
# what it consumes: the real binary against the harness of tests/e2e/dra/ (kubelet and API server),
# the booking (request and limit), the limit file a real podman container sees through the claim's
# CDI id, and one-line refusals. Scenarios: tests/e2e/dra/burst_scenarios.py.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/containers.sh"
source "$(dirname "$0")/dra/dra_lib.sh"
dra_podman_run dra-burst a100-40gb-x1.yaml burst_scenarios.py
finish
