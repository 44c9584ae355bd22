# --- this scenario ---------------------------------------------------------------------
def build(device, world):
    torch.manual_seed(928132423)
    dp_mesh = init_device_mesh(device, (world,), mesh_dim_names=("dp",))
    experts_mesh = dp_mesh
    blocks = [
        Block(4, 4, 1, 1, 1, "moe", gated=True, attention=False, norm=False, no_grad=False),
    ]
    model = Model(4, 0, False, blocks)
    model.layers[0] = checkpointed(model.layers[0], "non_reentrant")
    fully_shard(model.out, mesh=dp_mesh)
    fully_shard(model.layers[0].moe.experts, mesh=dp_mesh)
    fully_shard(model.layers[0], mesh=dp_mesh)
    fully_shard(model, mesh=dp_mesh)
    return model


# The scenario as shardfuzz reads it (shardfuzz run / conform take it back from --json output).
SCENARIO_JSON = "{\"blocks\":[{\"ac\":\"non_reentrant\",\"ac_wraps_hooks\":false,\"attention\":false,\"frozen\":false,\"gated\":true,\"kind\":\"moe\",\"lora\":[],\"no_grad\":false,\"norm\":false}],\"device_memory_bytes\":0,\"dims\":{\"dim\":4,\"experts\":1,\"heads\":1,\"hidden\":4,\"lora_alpha\":4.0,\"lora_rank\":2,\"tokens\":2,\"top_k\":1,\"vocab\":16},\"dtype\":\"float32\",\"embed\":false,\"eval_forward\":false,\"expert_parallel\":false,\"expert_shard_size\":0,\"final_norm\":false,\"forwards_per_backward\":1,\"fully_shard\":{\"\":{\"mesh\":\"dp\",\"reshard_after_forward\":\"auto\",\"shard_dim\":0},\"layers.0\":{\"mesh\":\"dp\",\"reshard_after_forward\":\"auto\",\"shard_dim\":0},\"layers.0.moe.experts\":{\"mesh\":\"dp\",\"reshard_after_forward\":\"auto\",\"shard_dim\":0},\"out\":{\"mesh\":\"dp\",\"reshard_after_forward\":\"auto\",\"shard_dim\":0}},\"input_per_rank\":true,\"input_requires_grad\":true,\"loss\":\"mean\",\"micro_batches\":1,\"name\":\"seed-leak-gated-moe-nested-experts-ac\",\"optimizer\":{\"beta1\":0.9,\"beta2\":0.999,\"eps\":1e-08,\"kind\":\"sgd\",\"lr\":0.05,\"weight_decay\":0.0},\"profile\":\"torch-2.9\",\"schema\":1,\"seed\":15484047827470739032,\"steps\":1,\"world_size\":4}"

PLAN = dict(profile="torch-2.9", post_forward_in_backward=True, world_size=4, steps=1, micro_batches=1, forwards_per_backward=1,
            eval_forward=False, tokens=2, dim=4, vocab=0, seed=612634,
            dtype=torch.float32, input_requires_grad=True, loss="mean",
            optimizer=("sgd", 0.05, dict(betas=(0.9, 0.999), eps=1e-08, weight_decay=0)))

if __name__ == "__main__":
    main(build, PLAN)
