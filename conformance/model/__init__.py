"""What the suite knows, as data: the driver profile, the requirements catalog, and pure
functions over them and over API objects. Nothing here talks to a cluster.

| module           | owns                                                                   |
|------------------|------------------------------------------------------------------------|
| `profile`        | the driver profile's data classes and `load_profile`                   |
| `profile_parse`  | the profile's typed schema (`ProfileDocument`), reading and validating   |
| `profile_sections` | the profile's smaller sections (nodes, selectors, readiness, ...)    |
| `profile_types`  | field types several profile sections share (class names, images)      |
| `profile_install` | the profile's `install` section (manifests, helm, preinstalled, image) |
| `profile_verification` | the profile's `verification` section                           |
| `profile_jsonschema` | docs/profile.schema.json, generated from the typed schema          |
| `fault_config`   | the fault kinds and the profile's `faults` section (how each is injected) |
| `requirements`   | the requirements catalog: loading, applicability to a driver/cluster   |
| `requirements_schema` | the catalog's typed schema                                        |
| `known_issues`   | known upstream platform bugs per Kubernetes version (`known_issues.yaml`) |
| `kube_version`   | Kubernetes versions (pre-releases, vendor builds) ordered as releases  |
| `capabilities`   | capability names shared by the profile and the catalog                 |
| `feature_gates`  | when the DRA feature gates went GA (a gate gone from the metrics is on) |
| `component_metrics` | the arguments that make the control plane's /metrics readable to a run |
| `schema`         | reading user-written YAML (strict loader, error class, did-you-mean)   |
| `typed`          | pydantic building blocks: strict sections, field types with our messages |
| `typed_errors`   | pydantic's errors as `field.path: message` lines                        |
| `opaque_config`  | the profile's `opaqueConfig` (DRA-ALLOC-014)                            |
| `cdi_paths`      | the profile's `cdi` section (spec directories, kubelet root)           |
| `cdi_lookup`     | which CDI spec files are a claim's: by the kubelet's CDI ids or its UID |
| `node_commands`  | the profile's `nodeCommands` (how the suite reaches a node)            |
| `cel`            | CEL text for selectors: attribute/capacity names, references, literals |
| `devices`        | published devices (from ResourceSlices) and which kinds can use them   |
| `slice_checks`   | what DRA-CORE-002 demands of ResourceSlices (pure checks)              |
| `pool_history`   | what DRA-LIFE-004 demands of a node's pools across driver restarts     |
| `node_selection` | does a Node match a NodeSelector                                       |
| `outcome`        | typed outcomes: not applicable / not run                               |
| `readiness_failure` | which part of driver readiness failed, and what the cluster said    |
| `naming`         | names and label values derived from run ids and test ids               |
| `frozen`         | an immutable, picklable mapping for frozen dataclasses                 |
| `binding_conditions` | the profile's `bindingConditions` (DRA-ALLOC-018) |
| `consumable_capacity` | the profile's `consumableCapacity` (DRA-ALLOC-017) |
| `partitionable`  | the profile's `partitionableDevices` (DRA-ALLOC-016) |
| `counters`       | shared counters of partitionable devices, from ResourceSlices |
| `device_metadata` | KEP-5304 device metadata files against the allocation |
| `device_status`  | a driver's `status.devices` entries against the allocation |
| `driver_workloads` | which workloads are the driver's, and their accounts |
| `privileges`     | what a driver's accounts must not be allowed (security suite) |
| `metrics_text`   | Prometheus text narrowed to the families the suite reads |
| `profile_gomodule` | `install.image.goModule`: a driver built from its Go module |
| `cluster_block` | the profile's `cluster` block (gates, kubelet, containerd, ...), its digest |
| `cluster_block_check` | the `cluster` block compared with what a cluster shows (pure) |
"""
