"""genesis.hub: torch.hub's API. `load_state_dict_from_url` downloads a checkpoint once into a
cache and loads it; `load`, `list` and `help` run the entry points of a repository's hubconf.py,
from GitHub (downloaded as a zip archive) or from a local directory.

The cache is PyTorch's: `$TORCH_HOME/hub`, `$TORCH_HOME` defaulting to `$XDG_CACHE_HOME/torch`
and that to `~/.cache/torch` (Genesis has no variable of its own), so weights PyTorch downloaded
are reused. Checkpoints load through genesis.load, which reads Genesis's safetensors files and
the files torch.save writes (those weights only: no code from them runs).
"""

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import uuid
import warnings
import zipfile
from pathlib import Path
from urllib.error import ContentTooShortError, HTTPError, URLError
from urllib.parse import urlparse
from urllib.request import Request, urlopen

from . import serialization

__all__ = ["download_url_to_file", "get_dir", "help", "list", "load", "load_state_dict_from_url",
           "set_dir"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # bfd8deac in resnet18-bfd8deac.pth
ENV_GITHUB_TOKEN = "GITHUB_TOKEN"
ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
VAR_DEPENDENCY = "dependencies"
MODULE_HUBCONF = "hubconf.py"
READ_DATA_CHUNK = 128 * 1024
_TRUSTED_REPO_OWNERS = ("facebookresearch", "facebookincubator", "pytorch", "fairinternal")
_hub_dir = None


def get_dir():
    """The hub cache: what set_dir chose, else `$TORCH_HOME/hub` (PyTorch's, shared with it)."""
    if os.getenv("TORCH_HUB"):
        warnings.warn("TORCH_HUB is deprecated, please use env TORCH_HOME instead", stacklevel=2)
    if _hub_dir is not None:
        return _hub_dir
    cache = os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR)
    return os.path.join(os.path.expanduser(
        os.getenv(ENV_TORCH_HOME, os.path.join(cache, "torch"))), "hub")


def set_dir(d):
    """Use the folder `d` as the hub cache from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(d)


# Downloads and checkpoints

def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Download `url` to `dst` through a temporary file beside it, renamed over `dst` only once
    complete (all of Content-Length, which PyTorch does not check: urllib returns a cut body
    without error) and, given `hash_prefix`, once its SHA-256 digest starts with it: a failed
    download leaves no partial file."""
    dst = os.path.expanduser(dst)
    tmp = f"{dst}.{uuid.uuid4().hex}.partial"
    sha256, got = hashlib.sha256(), 0
    try:
        with open(tmp, "xb") as out, urlopen(
                Request(url, headers={"User-Agent": "genesis.hub"})) as response:
            size = response.headers.get("Content-Length")
            size = int(size) if size else None
            with _progress_bar(size, progress) as bar:
                while chunk := response.read(READ_DATA_CHUNK):
                    out.write(chunk)
                    sha256.update(chunk)
                    bar.update(len(chunk))
                    got += len(chunk)
        if size is not None and got != size:
            raise ContentTooShortError(f"{url}: the download ended after {got} of {size} bytes",
                                       None)
        digest = sha256.hexdigest()
        if hash_prefix is not None and not digest.startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{digest}")')
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _progress_bar(total, enabled):
    """tqdm's bar in bytes when tqdm is installed, else a percentage written to stderr."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _PercentBar(total, enabled)
    return tqdm(total=total, disable=not enabled, unit="B", unit_scale=True, unit_divisor=1024)


class _PercentBar:
    def __init__(self, total, enabled):
        self.total, self.enabled, self.n = total, enabled, 0

    def update(self, n):
        self.n += n
        if self.enabled:
            done = f"{self.n} bytes" if self.total is None else f"{100 * self.n / self.total:.1f}%"
            sys.stderr.write(f"\r{done}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled:
            sys.stderr.write("\n")


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True,
                             check_hash=False, file_name=None, weights_only=False):
    """The object saved at `url`, downloaded once into `model_dir` (`<hub dir>/checkpoints`) and
    read by genesis.load. `check_hash` checks the file against the SHA-256 prefix in its name
    (`name-<sha256 prefix>.ext`). weights_only defaults to False, as PyTorch's does: it lets a
    Genesis file of whole modules import them; torch.save's files always load weights only."""
    if os.getenv("TORCH_MODEL_ZOO"):
        warnings.warn("TORCH_MODEL_ZOO is deprecated, please use env TORCH_HOME instead",
                      stacklevel=2)
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = os.path.basename(urlparse(url).path) if file_name is None else file_name
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match and match.group(1), progress=progress)
    if _is_legacy_zip_format(cached_file):
        cached_file = _extract_legacy_zip(cached_file, model_dir)
    return serialization.load(cached_file, map_location=map_location, weights_only=weights_only)


def _is_legacy_zip_format(filename):
    """A zip of one file (a pre-1.6 torch.save file zipped by hand), not torch.save's archive."""
    if not zipfile.is_zipfile(filename):
        return False
    with zipfile.ZipFile(filename) as archive:
        members = archive.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _extract_legacy_zip(filename, model_dir):
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor "
                  "of default zipfile format introduced in 1.6. Please redo torch.save() to save "
                  "it in the new zipfile format.", FutureWarning, stacklevel=3)
    with zipfile.ZipFile(filename) as archive:
        _safe_extract_zip(archive, model_dir)
        return os.path.join(model_dir, archive.infolist()[0].filename)


def _safe_extract_zip(archive, extract_to):
    """Extract `archive`, refusing any entry whose path leaves `extract_to` (zip slip)."""
    root = Path(extract_to).resolve()
    for member in archive.infolist():
        name = os.path.normpath(member.filename)
        if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
            raise ValueError(f"Archive entry has absolute path: {member.filename}")
        if ".." in re.split(r"[/\\]", name):
            raise ValueError(f"Archive entry contains directory traversal: {member.filename}")
        if not (root / name).resolve().is_relative_to(root):
            raise ValueError(f"Archive entry escapes target directory: {member.filename}")
        archive.extract(member, root)


# hubconf.py entry points

def list(github, force_reload=False, skip_validation=False, trust_repo="check", verbose=True, *,
         source="github"):
    """The names of the entry points in the repository's hubconf.py. `source='local'` (a Genesis
    addition; PyTorch's list reads GitHub only) reads the directory `github` instead."""
    hubconf = _import_hubconf(
        _repo_dir(github, source, force_reload, trust_repo, verbose, skip_validation))
    return [f for f in dir(hubconf) if callable(getattr(hubconf, f)) and not f.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo="check", *,
         source="github"):
    """The docstring of the entry point `model`; `source` as for `list`."""
    repo_dir = _repo_dir(github, source, force_reload, trust_repo, True, skip_validation)
    return _load_entry_from_hubconf(_import_hubconf(repo_dir), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo="check", force_reload=False,
         verbose=True, skip_validation=False, **kwargs):
    """`model(*args, **kwargs)`, `model` being an entry point of the hubconf.py of a GitHub
    repository (`owner/name[:ref]`) or, with source='local', of a directory."""
    repo_dir = _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation)
    hubconf = _import_hubconf(repo_dir)
    with _add_to_sys_path(repo_dir):
        return _load_entry_from_hubconf(hubconf, model)(*args, **kwargs)


def _repo_dir(repo_or_dir, source, force_reload, trust_repo, verbose, skip_validation):
    source = source.lower()
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return repo_or_dir
    return _get_cache_or_reload(repo_or_dir, force_reload, trust_repo, verbose, skip_validation)


@contextlib.contextmanager
def _add_to_sys_path(path):
    sys.path.insert(0, path)
    try:
        yield
    finally:
        sys.path.remove(path)


def _import_hubconf(repo_dir):
    """The repository's hubconf.py, run as a module with the repository on sys.path."""
    spec = importlib.util.spec_from_file_location(
        MODULE_HUBCONF, os.path.join(repo_dir, MODULE_HUBCONF))
    module = importlib.util.module_from_spec(spec)
    with _add_to_sys_path(repo_dir):
        spec.loader.exec_module(module)
    return module


def _load_entry_from_hubconf(hubconf, model):
    if not isinstance(model, str):
        raise ValueError("Invalid input: model should be a string of function name")
    missing = [name for name in getattr(hubconf, VAR_DEPENDENCY, None) or ()
               if importlib.util.find_spec(name) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    entry = getattr(hubconf, model, None) if model in dir(hubconf) else None
    if entry is None or not callable(entry):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return entry


# GitHub repositories

def _get_cache_or_reload(github, force_reload, trust_repo, verbose=True, skip_validation=False):
    """The folder in the hub cache holding `owner/name[:ref]`, downloaded unless cached."""
    hub_dir = get_dir()
    os.makedirs(hub_dir, exist_ok=True)
    owner, name, ref = _parse_repo_info(github)
    owner_name_branch = _cache_name(owner, name, ref)
    repo_dir = os.path.join(hub_dir, owner_name_branch)
    _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo)
    if not force_reload and os.path.exists(repo_dir):
        if verbose:
            sys.stderr.write(f"Using cache found in {repo_dir}\n")
        return repo_dir
    if not skip_validation:
        _validate_not_a_forked_repo(owner, name, ref)
    cached_zip = os.path.join(hub_dir, ref.replace("/", "_") + ".zip")
    _remove_if_exists(cached_zip)
    _download_archive(owner, name, ref, cached_zip)
    with zipfile.ZipFile(cached_zip) as archive:
        extracted = os.path.join(hub_dir, archive.infolist()[0].filename)
        _remove_if_exists(extracted)
        _safe_extract_zip(archive, hub_dir)
    _remove_if_exists(cached_zip)
    _remove_if_exists(repo_dir)
    shutil.move(extracted, repo_dir)
    return repo_dir


def _parse_repo_info(github):
    """(owner, name, ref) of `owner/name[:ref]`; no ref: main if GitHub has it, else master."""
    repo_info, _, ref = github.partition(":")
    parts = repo_info.split("/")
    if len(parts) != 2 or not all(parts) or ":" in ref:
        raise ValueError(f"Invalid GitHub repository {github!r}: expected "
                         "'repo_owner/repo_name[:ref]'")
    owner, name = parts
    return owner, name, ref or _default_branch(owner, name)


def _cache_name(owner, name, ref):
    """The cache folder's name: owner_name_ref, a '/' in the branch name made '_'."""
    return "_".join([owner, name, ref.replace("/", "_")])


def _default_branch(owner, name):
    try:
        with urlopen(f"https://github.com/{owner}/{name}/tree/main/"):
            return "main"
    except HTTPError as e:
        if e.code == 404:
            return "master"
        raise
    except URLError as e:  # offline: a branch already in the cache, if any
        for ref in ("main", "master"):
            if os.path.exists(os.path.join(get_dir(), _cache_name(owner, name, ref))):
                return ref
        raise RuntimeError("It looks like there is no internet connection and the repo could "
                           f"not be found in the cache ({get_dir()})") from e


def _git_archive_link(owner, name, ref):
    return f"https://github.com/{owner}/{name}/zipball/{ref}"


def _download_archive(owner, name, ref, dst):
    url = _git_archive_link(owner, name, ref)
    sys.stdout.write(f'Downloading: "{url}" to {dst}\n')
    try:
        download_url_to_file(url, dst, progress=False)
    except HTTPError as err:
        if err.code != 300:
            raise
        warnings.warn(f"The ref {ref} is ambiguous. Perhaps it is both a tag and a branch in the "
                      "repo? Genesis hub will now assume that it's a branch. You can "
                      "disambiguate tags and branches by explicitly passing refs/heads/branch_name "
                      "or refs/tags/tag_name as the ref. That might require using "
                      "skip_validation=True.", stacklevel=2)
        download_url_to_file(_git_archive_link(owner, name, f"refs/heads/{ref}"), dst,
                             progress=False)


def _read_url(request):
    with urlopen(request) as r:
        return r.read().decode(r.headers.get_content_charset("utf-8"))


def _validate_not_a_forked_repo(owner, name, ref):
    """Check through GitHub's API that `ref` is a branch, tag or commit of the repository itself,
    not of a fork (GITHUB_TOKEN, if set, authenticates the requests)."""
    headers = {"Accept": "application/vnd.github.v3+json"}
    if os.environ.get(ENV_GITHUB_TOKEN) is not None:
        headers["Authorization"] = f"token {os.environ[ENV_GITHUB_TOKEN]}"
    for kind in ("branches", "tags"):
        page = 0
        while True:
            page += 1
            url = f"https://api.github.com/repos/{owner}/{name}/{kind}?per_page=100&page={page}"
            try:
                response = json.loads(_read_url(Request(url, headers=headers)))
            except HTTPError:  # the token may lack permissions: retry without it
                if headers.pop("Authorization", None) is None:
                    raise
                response = json.loads(_read_url(Request(url, headers=headers)))
            if not response:
                break
            if any(r["name"] == ref or r["commit"]["sha"].startswith(ref) for r in response):
                return
    raise ValueError(f"Cannot find {ref} in https://github.com/{owner}/{name}. If it's a commit "
                     "from a forked repo, please call hub.load() with forked repo directly.")


def _check_repo_is_trusted(owner, name, owner_name_branch, trust_repo):
    """Ask before running code from a repository not trusted yet (trust_repo False, or "check"
    and not in the trusted_list file, not cached already, not a PyTorch-owned repository); a
    repository trusted now is added to the list."""
    hub_dir = get_dir()
    path = os.path.join(hub_dir, "trusted_list")
    Path(path).touch()
    with open(path) as f:
        trusted = tuple(line.strip() for line in f)
    owner_name = f"{owner}_{name}"
    is_trusted = (owner_name in trusted or owner in _TRUSTED_REPO_OWNERS
                  or owner_name_branch in next(os.walk(hub_dir))[1])
    if trust_repo is False or (trust_repo == "check" and not is_trusted):
        response = input(f"The repository {owner_name} does not belong to the list of trusted "
                         "repositories and as such cannot be downloaded. Do you trust this "
                         "repository and wish to add it to the trusted list of repositories "
                         "(y/N)?")
        if response.lower() in ("y", "yes"):
            if is_trusted:
                print("The repository is already trusted.")
        elif response.lower() in ("n", "no", ""):
            raise Exception("Untrusted repository.")  # PyTorch's type, which callers catch
        else:
            raise ValueError(f"Unrecognized response {response}.")
    if not is_trusted:
        with open(path, "a") as f:
            f.write(owner_name + "\n")


def _remove_if_exists(path):
    if os.path.isfile(path):
        os.remove(path)
    elif os.path.exists(path):
        shutil.rmtree(path)
