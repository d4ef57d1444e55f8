"""The pretrained models' helpers under the one name the tests and benches have imported them by: each name
is built in the module named for what it builds, and only re-exported here.

- tests/support/pretrained_lite0.py: EfficientNet-Lite0 (ImageNet-1k classifier);
- tests/support/pretrained_minilm.py: all-MiniLM-L6-v2, fp32 and a third party's int8 ONNX;
- tests/support/sample_images.py: the sample images and their normalisation;
- tests/support/pretrained_packages.py: finding a model's package and files in site-packages.

New code imports from those modules.
"""

from __future__ import annotations

from tests.support.pretrained_lite0 import EFFICIENTNET_LITE0_PIP as EFFICIENTNET_LITE0_PIP
from tests.support.pretrained_lite0 import IMAGENET_CLASSES as IMAGENET_CLASSES
from tests.support.pretrained_lite0 import EfficientNetLite0 as EfficientNetLite0
from tests.support.pretrained_lite0 import MBConv as MBConv
from tests.support.pretrained_lite0 import SameConv2d as SameConv2d
from tests.support.pretrained_lite0 import efficientnet_lite0 as efficientnet_lite0
from tests.support.pretrained_lite0 import efficientnet_lite0_weights as efficientnet_lite0_weights
from tests.support.pretrained_minilm import MINILM_FP32_PIP as MINILM_FP32_PIP
from tests.support.pretrained_minilm import MINILM_HIDDEN as MINILM_HIDDEN
from tests.support.pretrained_minilm import MINILM_INPUTS as MINILM_INPUTS
from tests.support.pretrained_minilm import MINILM_INT8_PIP as MINILM_INT8_PIP
from tests.support.pretrained_minilm import MINILM_MAX_TOKENS as MINILM_MAX_TOKENS
from tests.support.pretrained_minilm import SENTENCE_EMBEDDING as SENTENCE_EMBEDDING
from tests.support.pretrained_minilm import MiniLMEncoder as MiniLMEncoder
from tests.support.pretrained_minilm import append_mean_pooling as append_mean_pooling
from tests.support.pretrained_minilm import export_minilm_encoder as export_minilm_encoder
from tests.support.pretrained_minilm import minilm_encoder as minilm_encoder
from tests.support.pretrained_minilm import minilm_fp32_onnx as minilm_fp32_onnx
from tests.support.pretrained_minilm import minilm_int8_onnx as minilm_int8_onnx
from tests.support.pretrained_minilm import minilm_model_dir as minilm_model_dir
from tests.support.pretrained_minilm import minilm_tokenizer as minilm_tokenizer
from tests.support.pretrained_minilm import tokenize as tokenize
from tests.support.pretrained_packages import PretrainedModelMissing as PretrainedModelMissing
from tests.support.pretrained_packages import import_package as import_package
from tests.support.pretrained_packages import packaged_file as packaged_file
from tests.support.sample_images import IMAGE_SIZE as IMAGE_SIZE
from tests.support.sample_images import IMAGENET_MEAN as IMAGENET_MEAN
from tests.support.sample_images import IMAGENET_STD as IMAGENET_STD
from tests.support.sample_images import LITE_MEAN as LITE_MEAN
from tests.support.sample_images import LITE_STD as LITE_STD
from tests.support.sample_images import Normalisation as Normalisation
from tests.support.sample_images import SampleImages as SampleImages
from tests.support.sample_images import normalise as normalise
from tests.support.sample_images import sample_images as sample_images
