"""The bundle: everything a run builds (node images, the harness's images, kind, helm, the
selector helper, the Allure generator), keyed as this checkout looks them up, in one file that
another machine loads instead of building (`dra-conformance bundle save|load`).

| module     | owns                                                                       |
|------------|----------------------------------------------------------------------------|
| `manifest` | the manifest (entries, keys, member sha256s) and the checks a bundle passes |
| `entries`  | what a run looks up, with the run's own keys, lookups and builders          |
| `archive`  | the tar file: members written and read with their sha256, installs by rename |
| `transfer` | `save` and `load`                                                           |
"""
