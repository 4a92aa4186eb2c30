# The game-noise figure: pair-outcome probabilities and the per-game draw rate of the
# vendored model, the Fishtest presets and every noise model the configuration uses.
# It needs no simulation, so it is drawn while the simulations run.


rule noise_figure:
    output:
        noise_models=report(
            "results/figures/noise_models.png",
            caption="../report/noise_models.rst",
            category="Noise model",
            labels={"figure": "noise models"},
        ),
        noise_models_svg="results/figures/noise_models.svg",
    log:
        "results/logs/noise_figure.log",
    benchmark:
        "results/benchmarks/noise_figure.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=JOB_OVERHEAD_MB + 120,  # 84-160 MB measured
        runtime=5,
    params:
        settings=get_noise_settings(),
    script:
        "../scripts/noise_figure.py"
