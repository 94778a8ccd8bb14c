/** Code attribution (docs/engine.md, "Code attribution"): samples to functions, lines and a call tree. */
export { codeFrames, isRuntimeFrame, RUNTIME_MODULE_PREFIXES, RUNTIME_FILE_PREFIXES, RUNTIME_FUNCTION_PREFIXES, type CodeFrames, type CodeFunction } from './frames.js';
export {
  functionTable,
  selectSamples,
  attributedFrame,
  objectLabel,
  dataObjects,
  type DataObject,
  CODE_ATTRIBUTIONS,
  CODE_LOCALITIES,
  type CodeLocality,
  type CodeAttribution,
  type CodeOp,
  type CodeOptions,
  type FunctionTableOptions,
  type FunctionTable,
  type FunctionRow,
  type FunctionLine,
  type FunctionObject,
  type SampleSelection,
} from './functions.js';
export { callTree, CALL_TREE_NODE_LIMIT, type CallTree, type CallTreeNode, type CallTreeOptions } from './call-tree.js';
