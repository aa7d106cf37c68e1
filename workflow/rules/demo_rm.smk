rule train_demo_rm:
    input:
        demo_training_data,
    output:
        P.DEMO_HEAD,
    params:
        part=lambda w: config["reward_models"][w.rm]["train_part"],
        training=config["demo_rm"],
    log:
        "logs/demo_rm/{rm}.log",
    threads: 2
    conda:
        "../../envs/core.yaml"
    script:
        "../scripts/train_demo_rm.py"
