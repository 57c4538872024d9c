// @attn/native: what attn's addon packages share at run time: the platform tag and the loader.
// The source build is '@attn/native/build' and the `attn-native` command.
export {
  lazyNativeAddon,
  loadNativeAddon,
  type AddonOrigin,
  type NativeAddonLoad,
  type NativeAddonSpec,
} from './addon-loader.js';
export { findPackageRoot, nativeConfig, readPackageJson, type NativeConfig, type PackageJson } from './package-json.js';
export { detectLibc, platformTag, prebuiltPackageName, type Libc } from './platform.js';
