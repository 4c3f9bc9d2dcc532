"""The calibrated cost model's constants (``optimize/calibration.py``), fitted by
``benchmarks/cost.py --fit``.

Written by that script; refit rather than edit (the provenance says on which table).
"""

WEIGHTS = {
    'calls': 2.5744563509946187e-05,
    'launch': 1.266983441607045,
    'library': 3.09632498421591e-05,
    'library_dram': 11.226469076777915,
    'dram': 0.1,
    'sectors': 0.12682750365557388,
    'tensor': 6.449032100435478,
    'fma': 0.1,
    'chain': 2.506854670761325,
    'vector': 74.3587893481362,
    'smem': 0.5603205513210131,
    'latency': 1.0879786485383893,
}
LATENCY_S = 1.5e-06
BURST = 1.0
PROVENANCE = {
    'table': 'data/timings/NVIDIA_H200.csv',
    'sha256': '2402b3305020bdf2498546527d463c26812347b87660e5bad201764700999d8c',
    'hardware': 'H200',
    'programs': ['gated_mlp', 'gqa', 'lora', 'mha', 'mqa', 'ntrans', 'qknorm_gqa', 'rmsnorm'],
    'fitted_by': 'benchmarks/cost.py --fit',
    'rows': 62,
    'log_rmse': 0.226707,
}
