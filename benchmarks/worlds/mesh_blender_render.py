"""Blender (Cycles) side of benchmarks/worlds/mesh_render_speed.py: renders the scenes of a job file.

Run by the benchmark as ``blender -b --factory-startup --python benchmarks/worlds/mesh_blender_render.py
-- <job.json>``. The job gives meshes (``vertices`` and ``faces`` lists, placed as MeshWorld
places them), and per render the object, its albedo, the camera's world matrix, the sun's
direction and strength, the point light's position and power, all already converted to Blender's
z-up axes by the benchmark, so this file needs nothing but Blender (whose Python has no numpy). It writes
``{"seconds": [...], "cpu_seconds": [...]}`` (wall and process CPU time per render, scene
updates included, Blender start-up not)
and PNGs of the first renders next to the job file.
"""

import json
import math
import sys
import time
from pathlib import Path

import bpy
from mathutils import Matrix, Vector


def diffuse_material(name, rgb):
    material = bpy.data.materials.new(name)
    material.use_nodes = True
    nodes = material.node_tree.nodes
    nodes.clear()
    bsdf = nodes.new("ShaderNodeBsdfDiffuse")
    bsdf.inputs["Color"].default_value = (*rgb, 1.0)
    out = nodes.new("ShaderNodeOutputMaterial")
    material.node_tree.links.new(bsdf.outputs["BSDF"], out.inputs["Surface"])
    return material, bsdf


def mesh_object(name, vertices, faces):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(v) for v in vertices], [], [tuple(int(i) for i in f) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def main():
    job_path = Path(sys.argv[sys.argv.index("--") + 1])
    job = json.loads(job_path.read_text())
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = job["spp"]
    scene.cycles.use_adaptive_sampling = False
    scene.cycles.use_denoising = False
    scene.cycles.max_bounces = job["max_bounces"]
    for kind in ("diffuse", "glossy", "transmission", "volume", "transparent"):
        setattr(scene.cycles, f"{kind}_bounces", job["max_bounces"])
    scene.render.threads_mode = "FIXED"
    scene.render.threads = job["threads"]
    scene.render.use_persistent_data = True
    scene.render.resolution_x = scene.render.resolution_y = job["size"]
    scene.render.resolution_percentage = 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "Standard"
    world = bpy.data.worlds.new("ambient")
    world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (*[job["ambient"]] * 3, 1.0)
    scene.world = world

    objects = []
    for i, data in enumerate(job["meshes"]):
        obj = mesh_object(f"object{i}", data["vertices"], data["faces"])
        obj.hide_render = True
        objects.append(obj)
    object_material, object_bsdf = diffuse_material("object", (0.5, 0.5, 0.5))
    for obj in objects:
        obj.data.materials.append(object_material)
    ground = mesh_object("ground", job["ground_vertices"], [(0, 1, 2), (0, 2, 3)])
    ground.data.materials.append(diffuse_material("ground", job["ground_albedo"])[0])

    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    camera.data.sensor_fit = "HORIZONTAL"
    camera.data.angle = math.radians(job["fov"])
    camera.data.clip_start = 0.01
    scene.collection.objects.link(camera)
    scene.camera = camera
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    lamp = bpy.data.objects.new("lamp", bpy.data.lights.new("lamp", "POINT"))
    lamp.data.shadow_soft_size = 0.0
    sun.data.angle = 0.0
    for light in (sun, lamp):
        scene.collection.objects.link(light)

    seconds, cpu_seconds, shown = [], [], None
    for k, r in enumerate(job["renders"]):
        start, cpu_start = time.perf_counter(), time.process_time()
        if shown != r["object"]:
            if shown is not None:
                objects[shown].hide_render = True
            objects[r["object"]].hide_render = False
            shown = r["object"]
        object_bsdf.inputs["Color"].default_value = (*r["albedo"], 1.0)
        ground.location.z = r["ground_z"]
        camera.matrix_world = Matrix(r["camera"])
        sun.rotation_euler = Vector(r["sun_direction"]).to_track_quat("-Z", "Y").to_euler()
        sun.data.energy = r["sun_strength"]
        lamp.location = Vector(r["lamp_position"])
        lamp.data.energy = r["lamp_watts"]
        scene.render.filepath = str(job_path.parent / f"blender_{k:03d}.png")
        bpy.ops.render.render(write_still=k < job["save_first"])
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.process_time() - cpu_start)
    (job_path.parent / "blender_times.json").write_text(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds}))


main()
