rule train_demo_rm:
    input:
        demo_training_data,
    output:
        paths.DEMO_HEAD,
    log:
        "logs/demo_rm/{rm}.log",
    conda:
        "../../envs/core.yaml"
    threads: 2
    params:
        part=lambda w: config["reward_models"][w.rm]["train_part"],
        training=config["demo_rm"],
    script:
        "../scripts/train_demo_rm.py"
