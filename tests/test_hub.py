"""genesis.hub against torch.hub, with no network: files come from file:// URLs or a local
http.server thread, and GitHub's zipball URL is pointed at a local zip."""

import builtins
import contextlib
import hashlib
import http.server
import io
import os
import sys
import threading
import urllib.error
import zipfile

import numpy as np
import pytest
import torch
import torch.hub

import genesis
from genesis import hub

HUBCONF = '''
"""A hubconf.py over a genesis model, with a helper module beside it."""
import genesis
from tinynet import TinyNet

dependencies = ["numpy"]


def tiny(width=4, weights_url=None):
    """A TinyNet of `width` hidden units; weights_url loads pretrained weights."""
    model = TinyNet(width)
    if weights_url is not None:
        model.load_state_dict(genesis.hub.load_state_dict_from_url(weights_url, progress=False))
    return model


def _private():
    return None
'''

TINYNET = '''
import genesis.nn as nn


class TinyNet(nn.Sequential):
    def __init__(self, width):
        super().__init__(nn.Linear(3, width), nn.ReLU(), nn.Linear(width, 2))
'''


@pytest.fixture(autouse=True)
def hub_dir(tmp_path, monkeypatch):
    """Each test has a hub cache of its own, for genesis and torch alike."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setattr(hub, "_hub_dir", None)
    monkeypatch.setattr(torch.hub, "_hub_dir", None)
    return tmp_path / "torch_home" / "hub"


@pytest.fixture
def server(tmp_path):
    """An http.server thread serving tmp_path/www; `.requests` lists the paths asked for."""
    root = tmp_path / "www"
    root.mkdir()
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self):
            requests.append(self.path)
            if self.path.startswith("/broken/"):  # promises more bytes than it sends
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"x" * 1000)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.root, httpd.requests = root, requests
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _hashed(path):
    """`path` renamed name-<sha256 prefix>.ext, as hub checkpoints are named."""
    named = path.with_name(f"{path.stem}-{_sha256(path)[:10]}{path.suffix}")
    path.rename(named)
    return named


def _repo(root):
    root.mkdir(parents=True, exist_ok=True)
    (root / "hubconf.py").write_text(HUBCONF)
    (root / "tinynet.py").write_text(TINYNET)
    return root


def _tensors_equal(a, b):
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_array_equal(a[key].numpy(), b[key].detach().numpy())


# get_dir / set_dir

@pytest.mark.parametrize("env", [{"TORCH_HOME": "~/th"}, {"XDG_CACHE_HOME": "/x/cache"}, {}],
                         ids=["TORCH_HOME", "XDG_CACHE_HOME", "default"])
def test_get_dir_follows_torchs_environment_rules(env, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("TORCH_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert hub.get_dir() == torch.hub.get_dir()
    assert "~" not in hub.get_dir()


def test_set_dir_overrides_and_expands_the_user(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    hub.set_dir("~/my_hub")
    assert hub.get_dir() == str(tmp_path / "my_hub")


def test_deprecated_variables_warn_as_in_torch(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_HUB", "/old")
    with pytest.warns(UserWarning, match="TORCH_HUB is deprecated, please use env TORCH_HOME"):
        hub.get_dir()
    monkeypatch.delenv("TORCH_HUB")
    monkeypatch.setenv("TORCH_MODEL_ZOO", "/old")
    genesis.save({"w": genesis.ones(1)}, tmp_path / "w.pt")
    with pytest.warns(UserWarning, match="TORCH_MODEL_ZOO is deprecated"):
        hub.load_state_dict_from_url((tmp_path / "w.pt").as_uri(), progress=False)


# download_url_to_file

def test_download_from_http_and_file_urls(server, tmp_path):
    payload = os.urandom(300_000)  # several read chunks
    (server.root / "blob.bin").write_bytes(payload)
    hub.download_url_to_file(f"{server.url}/blob.bin", tmp_path / "a.bin", progress=False)
    hub.download_url_to_file((server.root / "blob.bin").as_uri(), str(tmp_path / "b.bin"),
                             hash_prefix=hashlib.sha256(payload).hexdigest()[:12],
                             progress=False)
    assert (tmp_path / "a.bin").read_bytes() == payload == (tmp_path / "b.bin").read_bytes()


def test_a_hash_mismatch_raises_and_leaves_nothing(tmp_path):
    (tmp_path / "blob.bin").write_bytes(b"payload")
    digest = hashlib.sha256(b"payload").hexdigest()
    dst = tmp_path / "out" / "copy.bin"
    dst.parent.mkdir()
    with pytest.raises(RuntimeError, match=f'invalid hash value \\(expected "beef", got '
                                           f'"{digest}"\\)'):
        hub.download_url_to_file((tmp_path / "blob.bin").as_uri(), dst, "beef", progress=False)
    assert os.listdir(dst.parent) == []


def test_a_failed_download_keeps_the_old_file_and_leaves_no_partial(server, tmp_path):
    dst = tmp_path / "out" / "weights.pt"
    dst.parent.mkdir()
    dst.write_bytes(b"old")
    with pytest.raises(urllib.error.ContentTooShortError, match="ended after 1000 of 100000"):
        hub.download_url_to_file(f"{server.url}/broken/weights.pt", dst, progress=False)
    assert os.listdir(dst.parent) == ["weights.pt"] and dst.read_bytes() == b"old"
    with pytest.raises(urllib.error.HTTPError):
        hub.download_url_to_file(f"{server.url}/missing.pt", dst, progress=False)
    assert os.listdir(dst.parent) == ["weights.pt"]


def test_progress_goes_to_stderr_with_tqdm_or_without(tmp_path, capsys, monkeypatch):
    (tmp_path / "blob.bin").write_bytes(b"x" * 1000)
    url = (tmp_path / "blob.bin").as_uri()
    hub.download_url_to_file(url, tmp_path / "quiet.bin", progress=False)
    assert capsys.readouterr().err == ""
    hub.download_url_to_file(url, tmp_path / "tqdm.bin")
    assert "100%" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `from tqdm import tqdm` fails
    hub.download_url_to_file(url, tmp_path / "plain.bin")
    assert capsys.readouterr().err.endswith("100.0%\n")


# load_state_dict_from_url

def test_torch_and_genesis_checkpoints_load_and_are_cached(server, hub_dir, capsys):
    net = torch.nn.Linear(3, 2)
    torch.save(net.state_dict(), server.root / "torchnet.pth")
    torch_file = _hashed(server.root / "torchnet.pth")
    genesis.save(genesis.nn.Linear(3, 2).state_dict(), server.root / "genesisnet.safetensors")
    for path in (torch_file, server.root / "genesisnet.safetensors"):
        url = f"{server.url}/{path.name}"
        sd = hub.load_state_dict_from_url(url, progress=False, check_hash=True)
        assert f'Downloading: "{url}" to {hub_dir / "checkpoints" / path.name}' in \
            capsys.readouterr().out
        again = hub.load_state_dict_from_url(url, progress=False, check_hash=True)
        assert capsys.readouterr().out == ""
        _tensors_equal(sd, again)
    assert server.requests == [f"/{torch_file.name}", "/genesisnet.safetensors"]
    torch_url = f"{server.url}/{torch_file.name}"
    _tensors_equal(hub.load_state_dict_from_url(torch_url), net.state_dict())
    torch.hub.load_state_dict_from_url(torch_url)  # torch finds genesis's cache: same folder
    assert len(server.requests) == 2


def test_check_hash_refuses_a_file_that_does_not_match_its_name(tmp_path, hub_dir):
    torch.save({"w": torch.ones(1)}, tmp_path / "w-deadbeef.pt")
    with pytest.raises(RuntimeError, match='invalid hash value \\(expected "deadbeef"'):
        hub.load_state_dict_from_url((tmp_path / "w-deadbeef.pt").as_uri(), check_hash=True,
                                     progress=False)
    assert os.listdir(hub_dir / "checkpoints") == []
    assert hub.load_state_dict_from_url((tmp_path / "w-deadbeef.pt").as_uri(),
                                        progress=False)["w"].tolist() == [1.0]


def test_model_dir_file_name_and_map_location(tmp_path):
    torch.save({"w": torch.arange(3.0)}, tmp_path / "w.pt")
    seen = []
    sd = hub.load_state_dict_from_url((tmp_path / "w.pt").as_uri(), model_dir=tmp_path / "m",
                                      file_name="renamed.pt", progress=False,
                                      map_location=lambda t, where: seen.append(where))
    assert os.listdir(tmp_path / "m") == ["renamed.pt"] and seen == ["cpu"]
    assert sd["w"].tolist() == [0.0, 1.0, 2.0]


def test_weights_only_defaults_to_false_as_in_torch(tmp_path):
    genesis.save(genesis.nn.Linear(2, 2), tmp_path / "whole.pt")
    url = (tmp_path / "whole.pt").as_uri()
    assert isinstance(hub.load_state_dict_from_url(url, progress=False), genesis.nn.Linear)
    with pytest.raises(Exception, match="Weights only load failed"):
        hub.load_state_dict_from_url(url, progress=False, weights_only=True)


def test_a_zip_of_one_legacy_checkpoint_is_extracted_and_loaded(tmp_path, hub_dir):
    torch.save({"w": torch.arange(4)}, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with zipfile.ZipFile(tmp_path / "old.zip", "w") as z:
        z.write(tmp_path / "old.pt", "old.pt")
    with pytest.warns(FutureWarning, match="Falling back to the old format < 1.6"):
        sd = hub.load_state_dict_from_url((tmp_path / "old.zip").as_uri(), progress=False)
    assert sd["w"].tolist() == [0, 1, 2, 3]
    assert sorted(os.listdir(hub_dir / "checkpoints")) == ["old.pt", "old.zip"]


def test_zip_entries_leaving_the_folder_are_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "slip.zip", "w") as z:
        z.writestr("../evil.txt", "x")
    with zipfile.ZipFile(tmp_path / "slip.zip") as z, pytest.raises(
            ValueError, match="Archive entry contains directory traversal: ../evil.txt"):
        hub._safe_extract_zip(z, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


# hubconf.py entry points, local

def test_local_list_help_and_load(tmp_path):
    repo = str(_repo(tmp_path / "repo"))
    # every public callable of hubconf.py counts, imported ones too, as in torch
    assert hub.list(repo, source="local") == ["TinyNet", "tiny"]
    assert hub.help(repo, "tiny", source="local") == ("A TinyNet of `width` hidden units; "
                                                      "weights_url loads pretrained weights.")
    path_before = list(sys.path)
    model = hub.load(repo, "tiny", 8, source="local")
    assert sys.path == path_before
    assert isinstance(model, genesis.nn.Sequential) and model[0].out_features == 8
    assert hub.load(repo, "tiny", width=5, source="LOCAL")[2].in_features == 5


def test_a_hubconf_entry_point_loads_pretrained_weights(tmp_path):
    repo = str(_repo(tmp_path / "repo"))
    reference = hub.load(repo, "tiny", source="local")
    genesis.save(reference.state_dict(), tmp_path / "tiny.safetensors")
    model = hub.load(repo, "tiny", weights_url=(tmp_path / "tiny.safetensors").as_uri(),
                     source="local")
    _tensors_equal(model.state_dict(), reference.state_dict())


def test_entry_point_errors_as_torch(tmp_path):
    repo = str(_repo(tmp_path / "repo"))
    for call, error in [((repo, "nope"), RuntimeError), ((repo, 3), ValueError)]:
        with pytest.raises(error) as torch_error:
            torch.hub.load(*call, source="local")
        with pytest.raises(error, match=str(torch_error.value)):
            hub.load(*call, source="local")
    with pytest.raises(ValueError, match='Unknown source: "svn". Allowed values: "github" | '
                                         '"local".'):
        hub.load(repo, "tiny", source="svn")
    (tmp_path / "repo" / "hubconf.py").write_text(
        HUBCONF.replace('["numpy"]', '["numpy", "no_such_module_x", "no_such_module_y"]'))
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_x, "
                                           "no_such_module_y"):
        hub.load(repo, "tiny", source="local")


# GitHub repositories: parsing, naming, trust, validation, and a download from a local zip

def _fake_urlopen(outcome):
    def urlopen(url, *args, **kwargs):
        if isinstance(outcome, Exception):
            raise outcome
        return contextlib.nullcontext(io.BytesIO(b""))
    return urlopen


def _http_error(code):
    return urllib.error.HTTPError("https://github.com", code, "error", {}, None)


@pytest.mark.parametrize("github", ["pytorch/vision:v0.10", "owner/repo:release/2.0",
                                    "owner/repo:abc123"])
def test_explicit_refs_parse_as_in_torch(github):
    assert hub._parse_repo_info(github) == torch.hub._parse_repo_info(github)


@pytest.mark.parametrize("outcome, branch", [(None, "main"), (_http_error(404), "master")])
def test_the_default_branch_is_main_if_github_has_it_else_master(outcome, branch, monkeypatch):
    monkeypatch.setattr(hub, "urlopen", _fake_urlopen(outcome))
    assert hub._parse_repo_info("owner/repo") == ("owner", "repo", branch)


def test_the_default_branch_offline_comes_from_the_cache(monkeypatch, hub_dir):
    monkeypatch.setattr(hub, "urlopen", _fake_urlopen(urllib.error.URLError("offline")))
    with pytest.raises(RuntimeError, match="no internet connection and the repo could not be "
                                           "found in the cache"):
        hub._parse_repo_info("owner/repo")
    (hub_dir / "owner_repo_master").mkdir(parents=True)
    assert hub._parse_repo_info("owner/repo") == ("owner", "repo", "master")
    monkeypatch.setattr(hub, "urlopen", _fake_urlopen(_http_error(500)))
    with pytest.raises(urllib.error.HTTPError):
        hub._parse_repo_info("owner/repo")


@pytest.mark.parametrize("github", ["ownerrepo:main", "a/b/c", "/repo", "a/b:c:d"])
def test_malformed_repositories_raise_value_error(github):
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        hub._parse_repo_info(github)


def test_cache_folders_are_named_as_in_torch():
    assert hub._cache_name("owner", "repo", "release/2.0") == "owner_repo_release_2.0"
    assert hub._git_archive_link("o", "r", "v1") == torch.hub._git_archive_link("o", "r", "v1")


@pytest.fixture
def github(tmp_path, monkeypatch):
    """GitHub's zipball of owner/repo served from a local zip; `.version` changes its content."""
    zips = tmp_path / "zips"
    state = {"version": 0, "downloads": 0}

    def archive_link(owner, name, ref):
        state["downloads"] += 1
        repo = _repo(zips / f"{owner}-{name}-{state['version']}")
        (repo / "VERSION").write_text(str(state["version"]))
        path = zips / f"{owner}-{name}.zip"
        with zipfile.ZipFile(path, "w") as z:
            z.write(repo, f"{repo.name}/")
            for file in repo.iterdir():
                z.write(file, f"{repo.name}/{file.name}")
        return path.as_uri()

    monkeypatch.setattr(hub, "_git_archive_link", archive_link)
    return state


def test_github_repositories_download_once_into_the_cache(github, hub_dir, capsys):
    model = hub.load("owner/repo:feature/x", "tiny", 6, trust_repo=True, skip_validation=True)
    assert model[0].out_features == 6 and github["downloads"] == 1
    repo_dir = hub_dir / "owner_repo_feature_x"
    assert sorted(os.listdir(hub_dir)) == ["owner_repo_feature_x", "trusted_list"]
    assert (hub_dir / "trusted_list").read_text() == "owner_repo\n"
    assert (repo_dir / "VERSION").read_text() == "0"
    capsys.readouterr()
    assert hub.list("owner/repo:feature/x", skip_validation=True) == ["TinyNet", "tiny"]
    assert hub.help("owner/repo:feature/x", "tiny").startswith("A TinyNet")
    assert capsys.readouterr().err == f"Using cache found in {repo_dir}\n" * 2
    hub.list("owner/repo:feature/x", verbose=False)
    assert capsys.readouterr().err == "" and github["downloads"] == 1
    github["version"] = 1
    hub.list("owner/repo:feature/x", force_reload=True, skip_validation=True)
    assert (repo_dir / "VERSION").read_text() == "1" and github["downloads"] == 2
    assert sorted(os.listdir(hub_dir)) == ["owner_repo_feature_x", "trusted_list"]


@pytest.mark.parametrize("answer, error", [("n", Exception), ("", Exception),
                                           ("maybe", ValueError)])
def test_untrusted_repositories_are_refused_unless_the_user_agrees(answer, error, github,
                                                                   monkeypatch, hub_dir):
    monkeypatch.setattr(builtins, "input", lambda prompt: answer)
    with pytest.raises(error, match="Untrusted repository|Unrecognized response maybe"):
        hub.list("owner/repo:main", skip_validation=True)
    assert github["downloads"] == 0
    assert (hub_dir / "trusted_list").read_text() == ""


def test_trusting_a_repository_once_adds_it_to_the_list(github, monkeypatch, hub_dir):
    prompts = []
    monkeypatch.setattr(builtins, "input", lambda prompt: prompts.append(prompt) or "yes")
    assert hub.list("owner/repo:main", skip_validation=True) == ["TinyNet", "tiny"]
    assert "The repository owner_repo does not belong to the list of trusted" in prompts[0]
    assert (hub_dir / "trusted_list").read_text() == "owner_repo\n"
    hub.list("owner/repo:dev", skip_validation=True)  # trusted now, whatever the branch
    hub.list("pytorch/anything:main", skip_validation=True)  # PyTorch's own owners
    assert len(prompts) == 1
    hub.list("owner/repo:main", trust_repo=False)  # False always asks
    assert len(prompts) == 2 and (hub_dir / "trusted_list").read_text() == "owner_repo\n"


def test_refs_are_validated_against_the_repositorys_branches_and_tags(monkeypatch):
    pages = {"branches": [[{"name": "main", "commit": {"sha": "aaa111"}}], []],
             "tags": [[{"name": "v1.0", "commit": {"sha": "bbb222"}}], []]}
    asked = []

    def read_url(request):
        asked.append((request.full_url, request.get_header("Authorization")))
        kind = request.full_url.split("/")[-1].split("?")[0]
        page = int(request.full_url.rsplit("=", 1)[1])
        return __import__("json").dumps(pages[kind][page - 1])

    monkeypatch.setattr(hub, "_read_url", read_url)
    monkeypatch.setenv("GITHUB_TOKEN", "secret")
    for ref in ("main", "v1.0", "bbb2"):
        hub._validate_not_a_forked_repo("owner", "repo", ref)
    assert asked[0] == ("https://api.github.com/repos/owner/repo/branches?per_page=100&page=1",
                        "token secret")
    with pytest.raises(ValueError, match="Cannot find fork-branch in https://github.com/owner/"
                                         "repo. If it's a commit from a forked repo"):
        hub._validate_not_a_forked_repo("owner", "repo", "fork-branch")


def test_an_ambiguous_ref_is_fetched_as_a_branch(monkeypatch, tmp_path):
    urls = []

    def download(url, dst, hash_prefix=None, progress=True):
        urls.append(url)
        if len(urls) == 1:
            raise urllib.error.HTTPError(url, 300, "Multiple Choices", {}, None)

    monkeypatch.setattr(hub, "download_url_to_file", download)
    with pytest.warns(UserWarning, match="The ref v1 is ambiguous"):
        hub._download_archive("o", "r", "v1", str(tmp_path / "v1.zip"))
    assert urls == ["https://github.com/o/r/zipball/v1",
                    "https://github.com/o/r/zipball/refs/heads/v1"]
