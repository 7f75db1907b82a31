"""Validated, frozen input schemas: the model, the accelerator, the workloads.

Each name loads its module on first use (calc.lazy), so that `from calc.spec.model import
ModelSpec` or `from calc.spec import GPU` builds only the schemas it needs, not all of them.
"""

from calc.lazy import lazy_dir, lazy_getattr

_LAZY = {
    "BYTES_PER_ELEMENT": "calc.spec.precision:BYTES_PER_ELEMENT",
    "DTYPES": "calc.spec.hardware:DTYPES",
    "GPU": "calc.spec.hardware:GPU",
    "OPTIMIZERS": "calc.spec.memory:OPTIMIZERS",
    "RECIPES": "calc.spec.memory:RECIPES",
    "STORAGE_DTYPES": "calc.spec.precision:STORAGE_DTYPES",
    "AttentionConvention": "calc.spec.workload:AttentionConvention",
    "AttentionSpec": "calc.spec.attention:AttentionSpec",
    "ComputeBudget": "calc.spec.budget:ComputeBudget",
    "DeltaNetSpec": "calc.spec.layers:DeltaNetSpec",
    "LightningSpec": "calc.spec.layers:LightningSpec",
    "RwkvSpec": "calc.spec.layers:RwkvSpec",
    "GriffinSpec": "calc.spec.layers:GriffinSpec",
    "MlstmSpec": "calc.spec.layers:MlstmSpec",
    "SharedBlockSpec": "calc.spec.layers:SharedBlockSpec",
    "PerLayerEmbeddingsSpec": "calc.spec.layers:PerLayerEmbeddingsSpec",
    "AltUpSpec": "calc.spec.layers:AltUpSpec",
    "LaurelSpec": "calc.spec.layers:LaurelSpec",
    "PredictionHeadSpec": "calc.spec.layers:PredictionHeadSpec",
    "DrafterSpec": "calc.spec.drafter:DrafterSpec",
    "CentroidHeadSpec": "calc.spec.drafter:CentroidHeadSpec",
    "Dtype": "calc.spec.hardware:Dtype",
    "FFNSpec": "calc.spec.ffn:FFNSpec",
    "HyperConnectionsSpec": "calc.spec.layers:HyperConnectionsSpec",
    "IndexerSpec": "calc.spec.attention:IndexerSpec",
    "CompressionSpec": "calc.spec.attention:CompressionSpec",
    "DynamicMaskSpec": "calc.spec.attention:DynamicMaskSpec",
    "ResidualScalesSpec": "calc.spec.residual:ResidualScalesSpec",
    "BlockResidualSpec": "calc.spec.residual:BlockResidualSpec",
    "InferenceWorkload": "calc.spec.inference:InferenceWorkload",
    "LayerAt": "calc.spec.layers:LayerAt",
    "LayersSpec": "calc.spec.layers:LayersSpec",
    "MLASpec": "calc.spec.attention:MLASpec",
    "MambaSpec": "calc.spec.layers:MambaSpec",
    "MoESpec": "calc.spec.ffn:MoESpec",
    "ModelSpec": "calc.spec.model:ModelSpec",
    "NormSpec": "calc.spec.norm:NormSpec",
    "OutputGroupsSpec": "calc.spec.attention:OutputGroupsSpec",
    "PositionSpec": "calc.spec.position:PositionSpec",
    "ShortConvSpec": "calc.spec.layers:ShortConvSpec",
    "StorageDtype": "calc.spec.precision:StorageDtype",
    "System": "calc.spec.hardware:System",
    "TrainingMemory": "calc.spec.memory:TrainingMemory",
    "Workload": "calc.spec.workload:Workload",
}
__getattr__ = lazy_getattr(__name__, _LAZY)
__dir__ = lazy_dir(__name__, _LAZY)
__all__ = [*_LAZY]
